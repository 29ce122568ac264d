/**
 * The manifest URL source (--manifest-url, --manifest-url-header; the
 * kubelet's pkg/kubelet/config http.go): the URL is fetched on start and
 * every httpCheckFrequencyMs, with a deadline and the 10 MiB limit of
 * fetchManifestUrl, and the body is read like a manifest file.
 *
 * An unreadable URL must not delete running pods. So a fetch that fails
 * (connection refused, a timeout, HTTP 500, a body over the limit), an empty
 * body, an HTML page (a login portal, a proxy's error page) and a body in
 * which nothing is valid are failed reads: reported, pods kept. A body with
 * some valid and some invalid objects is a snapshot under keepLastGood's
 * rule (new and changed pods apply, nothing is removed until it reads
 * cleanly). A body that reads cleanly with no pods in it (`kind: List` with
 * no items, a comment) means no pods: that is how a URL stops them.
 *
 * The kubelet also reports an empty body, but applies it as "no pods"; here
 * it keeps the pods, since a zero-length 200 is the classic symptom of a
 * broken server or proxy. Errors name the URL without its query string,
 * which may carry a token.
 */
import { errorMessage, InputError } from '../errors.js';
import { fetchManifestUrl, ManifestUrlError } from './manifest-url.js';
import { ManifestError, parseManifestText, prepareManifests } from '../pod/manifest.js';
import { type ManifestUnit, type PodSource, type SourceRead, type SourceSink, Wakeup, keepLastGood, report } from './source.js';

/** The kubelet's default --http-check-frequency. */
export const DEFAULT_HTTP_CHECK_FREQUENCY_MS = 20_000;
/** The kubelet's http source client timeout. */
export const DEFAULT_HTTP_TIMEOUT_MS = 10_000;

export interface HttpSourceOptions {
  url: string;
  /** Request headers (parseHeaders of --manifest-url-header). */
  headers?: Record<string, string>;
  /** This node's name (static pods are named after it). */
  nodeName: string;
  /** Fetch this often. Default 20 s. */
  httpCheckFrequencyMs?: number;
  /** Deadline of one fetch, body included. Default 10 s. */
  timeoutMs?: number;
  /** Source name. Default `http`. */
  name?: string;
}

export class HttpSource implements PodSource {
  readonly name: string;
  private readonly url: string;
  /** The URL as errors show it: no credentials, no query. */
  private readonly display: string;
  private readonly headers: Record<string, string>;
  private readonly nodeName: string;
  private readonly periodMs: number;
  private readonly timeoutMs: number;
  private last: ManifestUnit | undefined;

  /** Throws InputError for a URL that is not http(s), so a command fails at once, not on every poll. */
  constructor(opts: HttpSourceOptions) {
    let parsed: URL;
    try {
      parsed = new URL(opts.url);
    } catch {
      throw new InputError(`"${opts.url}": not a URL`, { input: 'manifestUrl' });
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new InputError(`"${opts.url}": only http and https URLs are supported`, { input: 'manifestUrl' });
    }
    this.name = opts.name ?? 'http';
    this.url = opts.url;
    this.display = `${parsed.origin}${parsed.pathname}`;
    this.headers = { ...opts.headers };
    this.nodeName = opts.nodeName;
    this.periodMs = opts.httpCheckFrequencyMs ?? DEFAULT_HTTP_CHECK_FREQUENCY_MS;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  }

  async run(sink: SourceSink, signal: AbortSignal): Promise<void> {
    const wakeup = new Wakeup();
    while (!signal.aborted) {
      const result = await this.read(signal);
      if (signal.aborted) break;
      report(sink, result);
      await wakeup.wait(this.periodMs, signal);
    }
  }

  /** One fetch of the URL. */
  async read(signal?: AbortSignal): Promise<SourceRead> {
    const fail = (message: string, line?: number, fieldPath?: string): SourceRead => ({
      failed: [new ManifestError({ file: this.display, line, fieldPath, message })],
    });
    let body: string;
    try {
      body = await fetchManifestUrl(this.url, { headers: this.headers, timeoutMs: this.timeoutMs, signal });
    } catch (err) {
      if (isTimeout(err)) return fail(`no complete response within ${this.timeoutMs} ms`);
      // The error's file names the URL here.
      return fail(err instanceof ManifestUrlError ? err.detail : errorMessage(err));
    }
    if (body.trim() === '') return fail('empty response body; serve a `kind: List` with no items to run no pods');
    if (/^\s*</.test(body)) return fail('the response is HTML or XML, not YAML or JSON manifests');

    const set = prepareManifests(parseManifestText(body, this.url, 'http'), { nodeName: this.nodeName });
    // The URL as parsed may hold a token: show the display form instead.
    set.errors = set.errors.map(
      (e) => new ManifestError({ file: this.display, line: e.line, fieldPath: e.fieldPath, message: e.message }),
    );
    set.pods = set.pods.map((p) => ({ ...p, source: { ...p.source, path: this.display } }));
    if (set.errors.length > 0 && set.pods.length + set.configMaps.length + set.secrets.length === 0) return { failed: set.errors };

    const unit = keepLastGood(this.display, set, this.last);
    this.last = unit;
    return { snapshot: { pods: unit.pods, objects: { configMaps: unit.configMaps, secrets: unit.secrets }, errors: set.errors } };
  }
}

/** Did the fetch deadline (AbortSignal.timeout) fire? Its own message ("The operation was aborted due to timeout") hides which deadline. */
function isTimeout(err: unknown): boolean {
  const cause = err instanceof Error ? err.cause : undefined;
  return (cause as { name?: unknown } | undefined)?.name === 'TimeoutError';
}
