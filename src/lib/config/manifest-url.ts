/**
 * Fetching pod manifests from a URL (runonce, the sync loop's URL source).
 * Errors name the URL; the command layer adds the flag (`input: manifestUrl`).
 */
import { InputError, errorMessage } from '../errors.js';

/** A manifest URL that could not be fetched: `url` (origin and path, never the query) and what went wrong. */
export class ManifestUrlError extends InputError {
  constructor(
    readonly url: string,
    readonly detail: string,
    cause?: unknown,
  ) {
    super(`${url}: ${detail}`, { input: 'manifestUrl', cause });
  }
}

/** The largest manifest body accepted from a URL (the kubelet reads at most 10 MiB too). */
export const MAX_URL_BODY_BYTES = 10 * 1024 * 1024;

/** Fetch a manifest URL with headers, a deadline and a size limit. */
export async function fetchManifestUrl(
  url: string,
  opts: { headers?: Record<string, string>; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InputError(`"${url}": not a URL`, { input: 'manifestUrl' });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InputError(`"${url}": only http and https URLs are supported`, { input: 'manifestUrl' });
  }
  const signals = [AbortSignal.timeout(opts.timeoutMs ?? 30_000), ...(opts.signal ? [opts.signal] : [])];
  let res: Response;
  try {
    res = await fetch(parsed, { headers: opts.headers, signal: AbortSignal.any(signals), redirect: 'follow' });
  } catch (err) {
    throw new ManifestUrlError(`${parsed.origin}${parsed.pathname}`, `${fetchFailure(err)}`, err);
  }
  if (!res.ok) throw new ManifestUrlError(`${parsed.origin}${parsed.pathname}`, `HTTP ${res.status} ${res.statusText}`);
  const len = Number(res.headers.get('content-length') ?? '0');
  if (len > MAX_URL_BODY_BYTES) {
    await res.body?.cancel();
    throw new ManifestUrlError(`${parsed.origin}${parsed.pathname}`, `body of ${len} bytes is larger than the 10 MiB limit`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of res.body ?? []) {
      total += (chunk as Uint8Array).length;
      if (total > MAX_URL_BODY_BYTES) {
        throw new ManifestUrlError(`${parsed.origin}${parsed.pathname}`, `body is larger than the 10 MiB limit`);
      }
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
  } catch (err) {
    // A deadline or a reset connection while reading the body is as much a
    // failed fetch as one before the headers: same error type, URL named.
    if (err instanceof InputError) throw err;
    throw new ManifestUrlError(`${parsed.origin}${parsed.pathname}`, `reading the body: ${fetchFailure(err)}`, err);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Why a fetch failed. undici reports every network failure as "fetch
 * failed" and keeps the reason (ECONNREFUSED, a DNS error, a TLS problem)
 * in `cause`: name it, it is the part the user can act on.
 */
function fetchFailure(err: unknown): string {
  const cause = err instanceof Error ? err.cause : undefined;
  return cause === undefined ? errorMessage(err) : `${errorMessage(err)}: ${errorMessage(cause)}`;
}

/** Parse repeated 'Name: value' HTTP headers. */
export function parseHeaders(values: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const i = v.indexOf(':');
    if (i <= 0) throw new InputError(`"${v.split(':')[0]}": expected "Name: value"`, { input: 'manifestUrlHeader' });
    out[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  }
  return out;
}
