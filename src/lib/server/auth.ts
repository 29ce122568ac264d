/**
 * Who may talk to the local API over TCP, and on which address.
 *
 * The unix socket is protected by its file mode (0600: root only). A TCP
 * port has no owner, so any local user or any page in a local browser could
 * reach it: the TCP listener is therefore loopback-only and every request
 * must carry a bearer token. The token is a secret: no message, log line or
 * response built here ever contains it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { open } from 'node:fs/promises';
import { isIP } from 'node:net';
import { InputError, errorMessage } from '../errors.js';

/** The option a listen error is about: the command layer names its flag (--listen). */
export const LISTEN_INPUT = 'listen';

/** A loopback TCP address for the local API. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** Token files are a line of text; anything bigger is the wrong file. */
const MAX_TOKEN_FILE_BYTES = 4096;

/** RFC 6750 b64token characters; also guarantees the token fits in a header. */
const TOKEN_PATTERN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** 127.0.0.0/8, ::1 and IPv4-mapped 127.x: addresses no other host can reach. */
export function isLoopbackHost(host: string): boolean {
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) !== 6) return false;
  // The WHATWG URL parser writes IPv6 in its canonical form: 0:0:0:0:0:0:0:1 → ::1, ::ffff:127.0.0.1 → ::ffff:7f00:1.
  const canonical = new URL(`http://[${host}]/`).hostname;
  return canonical === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(canonical);
}

/**
 * Parses `--listen HOST:PORT` (`127.0.0.1:10250`, `[::1]:10250`,
 * `localhost:10250`). Only loopback hosts are accepted: the local API
 * exposes the node's pods and is not meant to be reachable from elsewhere.
 * `localhost` becomes 127.0.0.1 so the bound address does not depend on the
 * resolver. Port 0 picks a free port.
 */
export function parseListen(value: string): ListenAddress {
  const bad = (why: string): InputError => new InputError(`"${value}": ${why}`, { input: LISTEN_INPUT });
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value.trim());
  if (!m) throw bad('expected HOST:PORT, e.g. 127.0.0.1:10255 or [::1]:10255');
  const rawHost = (m[1] ?? m[2]) as string;
  const port = Number(m[3]);
  if (port > 65535) throw bad('port must be between 0 and 65535');
  const host = rawHost.toLowerCase() === 'localhost' ? '127.0.0.1' : rawHost;
  if (m[1] !== undefined && isIP(host) !== 6) throw bad('brackets are only for IPv6 addresses');
  if (isIP(host) === 0) throw bad('the host must be an IP address or localhost');
  if (!isLoopbackHost(host)) {
    throw bad('only a loopback address (127.0.0.1, ::1 or localhost) is allowed; the local API must not be reachable from other hosts');
  }
  return { host, port };
}

/** Throws unless `token` is usable as a bearer token. The message never shows the token. */
export function assertValidToken(token: string, source: string, input?: string): void {
  if (token === '') throw new InputError(`${source} is empty`, { input });
  if (!TOKEN_PATTERN.test(token)) {
    throw new InputError(
      `${source}: the token has characters a bearer token cannot have (letters, digits and -._~+/ only, = at the end)`,
      { input },
    );
  }
}

/**
 * Reads a bearer token from a file: one line, surrounding whitespace
 * ignored. Refuses a file other users can read or write (the token would
 * not be secret, or could be replaced), a missing, empty or oversized file.
 */
export async function readAuthTokenFile(file: string): Promise<string> {
  const what = `token file ${file}`;
  let text: string;
  try {
    // One open file for the checks and the read, so they see the same file.
    const handle = await open(file, 'r');
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new InputError(`${what}: not a regular file`);
      if ((st.mode & 0o006) !== 0) {
        throw new InputError(`${what}: readable or writable by other users`, {
          suggestions: [`chmod 600 ${file}`],
        });
      }
      if (st.size > MAX_TOKEN_FILE_BYTES) throw new InputError(`${what}: larger than ${MAX_TOKEN_FILE_BYTES} bytes`);
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof InputError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new InputError(`${what}: no such file`);
    if (code === 'EACCES') throw new InputError(`${what}: permission denied`);
    if (code === 'EISDIR') throw new InputError(`${what}: not a regular file`);
    throw new InputError(`${what}: ${errorMessage(err)}`, { cause: err });
  }
  const token = text.trim();
  assertValidToken(token, what);
  return token;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Does an Authorization header carry `Bearer <token>`? Compares SHA-256
 * digests with timingSafeEqual: equal lengths whatever was sent, and no
 * early exit that would let response times reveal the token bit by bit.
 */
export function bearerTokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  const presented = m?.[1] ?? '';
  // Compare even when there is no token, so a missing header takes as long as a wrong one.
  const equal = timingSafeEqual(digest(presented), digest(token));
  return equal && m !== null;
}
