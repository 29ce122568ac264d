/**
 * httpGet probes (pkg/probe/http): a GET within the timeout (connect,
 * redirects and reading the body all count), 200-399 is success. HTTPS
 * does not verify the certificate. Redirects are followed (at most 10) only
 * while they stay on the same host; a redirect elsewhere ends the probe as
 * a success with a warning ("Probe terminated redirects"). At most 10 KiB
 * of the body is read, however much the server sends.
 */
import http from 'node:http';
import https from 'node:https';
import { dialError, joinHostPort } from './net-errors.js';
import { MAX_OUTPUT_BYTES, type HandlerResult } from './types.js';

/** The kubelet's User-Agent: kube-probe/<major>.<minor> of the kubelet klet follows. */
export const PROBE_USER_AGENT = 'kube-probe/1.31';

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

interface Answer {
  status: number;
  location: string | undefined;
  body: string;
}

class HttpRequestError extends Error {}

function requestOnce(url: URL, headers: Record<string, string>, deadline: number, signal: AbortSignal | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let settled = false;
    let gotHeaders = false;
    const fail = (msg: string): void => {
      if (settled) return;
      settled = true;
      cleanup();
      req.destroy();
      reject(new HttpRequestError(`Get "${url.href}": ${msg}`));
    };
    const done = (a: Answer): void => {
      if (settled) return;
      settled = true;
      cleanup();
      req.destroy();
      resolve(a);
    };
    const req = mod.request(
      {
        method: 'GET',
        host,
        port,
        path: `${url.pathname}${url.search}`,
        headers,
        agent: false,
        rejectUnauthorized: false,
      },
      (res) => {
        gotHeaders = true;
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = (): void =>
          done({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString('utf8') });
        res.on('data', (chunk: Buffer) => {
          const room = MAX_OUTPUT_BYTES - size;
          if (room > 0) {
            chunks.push(chunk.subarray(0, room));
            size += Math.min(room, chunk.length);
          }
          // Enough read: the rest is never downloaded (the kubelet's ReadAtMost).
          if (size >= MAX_OUTPUT_BYTES) finish();
        });
        res.once('end', finish);
        res.once('error', (err) => fail(err.message));
      },
    );
    const timer = setTimeout(
      () => fail(`context deadline exceeded (Client.Timeout exceeded while ${gotHeaders ? 'reading body' : 'awaiting headers'})`),
      Math.max(0, deadline - Date.now()),
    );
    const onAbort = (): void => fail('context canceled');
    signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    req.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code && /^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EADDRNOTAVAIL)$/.test(err.code)) {
        fail(dialError(host, port, err));
      } else if (err.code === 'ECONNRESET' || err.message === 'socket hang up') fail('EOF');
      else fail(err.message);
    });
    req.end();
  });
}

export async function httpProbe(t: HttpProbeTarget, timeoutMs: number, signal?: AbortSignal): Promise<HandlerResult> {
  const headers: Record<string, string> = {};
  for (const h of t.headers) headers[h.name] = h.value;
  const has = (name: string): boolean => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('user-agent')) headers['User-Agent'] = PROBE_USER_AGENT;
  if (!has('accept')) headers.Accept = '*/*';
  const deadline = Date.now() + timeoutMs;
  const first = probeUrl(t);
  let url = first;
  const redirects: string[] = [];
  const detail = (statusCode: number | null, body: string) => ({ handler: 'httpGet' as const, url: first.href, statusCode, body, redirects });
  for (;;) {
    let a: Answer;
    try {
      a = await requestOnce(url, headers, deadline, signal);
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
