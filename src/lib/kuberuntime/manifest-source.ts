/**
 * Pod sources for the one-shot commands: a manifest dir, files, or a URL,
 * loaded and validated, with the local ConfigMaps and Secrets of --objects.
 */
import { InputError, errorMessage } from '../errors.js';
import type { LocalObjects } from './env.js';

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
    throw new InputError(`--manifest-url "${url}": not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InputError(`--manifest-url "${url}": only http and https URLs are supported`);
  }
  const signals = [AbortSignal.timeout(opts.timeoutMs ?? 30_000), ...(opts.signal ? [opts.signal] : [])];
  let res: Response;
  try {
    res = await fetch(parsed, { headers: opts.headers, signal: AbortSignal.any(signals), redirect: 'follow' });
  } catch (err) {
    throw new InputError(`--manifest-url ${parsed.origin}${parsed.pathname}: ${fetchFailure(err)}`, { cause: err });
  }
  if (!res.ok) throw new InputError(`--manifest-url ${parsed.origin}${parsed.pathname}: HTTP ${res.status} ${res.statusText}`);
  const len = Number(res.headers.get('content-length') ?? '0');
  if (len > MAX_URL_BODY_BYTES) {
    await res.body?.cancel();
    throw new InputError(`--manifest-url ${parsed.origin}${parsed.pathname}: body of ${len} bytes is larger than the 10 MiB limit`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of res.body ?? []) {
      total += (chunk as Uint8Array).length;
      if (total > MAX_URL_BODY_BYTES) {
        throw new InputError(`--manifest-url ${parsed.origin}${parsed.pathname}: body is larger than the 10 MiB limit`);
      }
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
  } catch (err) {
    // A deadline or a reset connection while reading the body is as much a
    // failed fetch as one before the headers: same error type, URL named.
    if (err instanceof InputError) throw err;
    throw new InputError(`--manifest-url ${parsed.origin}${parsed.pathname}: reading the body: ${fetchFailure(err)}`, { cause: err });
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

/** Parse repeated `--manifest-url-header 'Name: value'` flags. */
export function parseHeaders(values: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const i = v.indexOf(':');
    if (i <= 0) throw new InputError(`--manifest-url-header "${v.split(':')[0]}": expected "Name: value"`);
    out[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  }
  return out;
}

export function emptyObjects(): LocalObjects {
  return { configMaps: [], secrets: [] };
}
