/**
 * httpGet probes (pkg/probe/http): a GET within the timeout (connect,
 * redirects and reading the body all count), 200-399 is success. HTTPS
 * does not verify the certificate. Redirects are followed (at most 10) only
 * while they stay on the same host; a redirect elsewhere ends the probe as
 * a success with a warning ("Probe terminated redirects"). At most 10 KiB
 * of the body is read, however much the server sends.
 */
import { http1Get, Http1Error, type Http1Answer } from './http1.js';
import { PROBE_USER_AGENT } from '../node/version.js';
import { joinHostPort } from './net-errors.js';
import { MAX_OUTPUT_BYTES, type HandlerResult } from './types.js';

/** The kubelet's User-Agent: kube-probe/<major>.<minor> of the kubelet klet follows (node/version.ts). */
export { PROBE_USER_AGENT };

const MAX_REDIRECTS = 10;

export interface HttpProbeTarget {
  scheme: 'HTTP' | 'HTTPS';
  host: string;
  port: number;
  /** Path and query, as in the probe ("/healthz", "healthz?verbose"). */
  path: string;
  headers: { name: string; value: string }[];
}

/** The probe's URL (the kubelet's formatURL). */
export function probeUrl(t: Pick<HttpProbeTarget, 'scheme' | 'host' | 'port' | 'path'>): URL {
  const p = t.path.startsWith('/') ? t.path : `/${t.path}`;
  return new URL(`${t.scheme.toLowerCase()}://${joinHostPort(t.host, t.port)}${p}`);
}

/** One request of the probe (redirects are more). */
async function requestOnce(url: URL, headers: [string, string][], hostHeader: string | undefined, deadline: number, signal: AbortSignal | undefined): Promise<Http1Answer> {
  const https = url.protocol === 'https:';
  const port = Number(url.port || (https ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  try {
    return await http1Get({ https, host, port, path: `${url.pathname}${url.search}`, hostHeader: hostHeader ?? joinHostPort(host, port), headers, deadline, maxBody: MAX_OUTPUT_BYTES, signal });
  } catch (err) {
    if (err instanceof Http1Error) throw new HttpRequestError(`Get "${url.href}": ${err.message}`);
    throw err;
  }
}

class HttpRequestError extends Error {}

export async function httpProbe(t: HttpProbeTarget, timeoutMs: number, signal?: AbortSignal): Promise<HandlerResult> {
  // The probe's headers, each sent (the kubelet's Header.Add); the first Host is the request's host (req.Host).
  const has = (name: string): boolean => t.headers.some((h) => h.name.toLowerCase() === name);
  const headers: [string, string][] = [];
  if (!has('user-agent')) headers.push(['User-Agent', PROBE_USER_AGENT]);
  if (!has('accept')) headers.push(['Accept', '*/*']);
  for (const h of t.headers) if (h.name.toLowerCase() !== 'host') headers.push([h.name, h.value]);
  const hostHeader = t.headers.find((h) => h.name.toLowerCase() === 'host')?.value;
  const deadline = Date.now() + timeoutMs;
  const first = probeUrl(t);
  let url = first;
  const redirects: string[] = [];
  const detail = (statusCode: number | null, body: string) => ({ handler: 'httpGet' as const, url: first.href, statusCode, body, redirects });
  for (;;) {
    let a: Http1Answer;
    try {
      a = await requestOnce(url, headers, hostHeader, deadline, signal);
    } catch (err) {
      if (!(err instanceof HttpRequestError)) throw err;
      return { outcome: 'failure', output: err.message, detail: detail(null, '') };
    }
    if (a.status >= 300 && a.status < 400 && a.location !== undefined) {
      let next: URL;
      try {
        next = new URL(a.location, url);
      } catch {
        return { outcome: 'failure', output: `Get "${url.href}": invalid redirect location "${a.location}"`, detail: detail(a.status, a.body) };
      }
      // Only same-host redirects are followed (the kubelet's followNonLocalRedirects=false).
      if (next.hostname === first.hostname && (next.protocol === 'http:' || next.protocol === 'https:')) {
        if (redirects.length >= MAX_REDIRECTS) {
          return { outcome: 'failure', output: `Get "${next.href}": stopped after ${MAX_REDIRECTS} redirects`, detail: detail(a.status, a.body) };
        }
        redirects.push(next.href);
        url = next;
        continue;
      }
      redirects.push(next.href);
    }
    if (a.status >= 200 && a.status < 400) {
      if (a.status >= 300) return { outcome: 'warning', output: `Probe terminated redirects, Response body: ${a.body}`, detail: detail(a.status, a.body) };
      return { outcome: 'success', output: a.body, detail: detail(a.status, a.body) };
    }
    return { outcome: 'failure', output: `HTTP probe failed with statuscode: ${a.status}`, detail: detail(a.status, a.body) };
  }
}
