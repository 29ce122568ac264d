/**
 * The kubelet server's `/logs/` (enableSystemLogHandler, on by default):
 * the node's `/var/log` as Go's `http.FileServer(http.Dir("/var/log"))`
 * serves it behind `http.StripPrefix("/logs/")` — what
 * `kubectl get --raw /api/v1/nodes/NODE/proxy/logs/` lists and
 * `…/proxy/logs/syslog` reads. Authorized as nodes/log (kubelet-auth.ts).
 *
 * As Go's file server: a directory is an HTML list of its entries sorted by
 * name (`name/` for directories), or its index.html; a directory asked for
 * without its trailing slash, a file with one, or a path ending in
 * /index.html is a 301 to the right form; a file has Last-Modified,
 * Content-Length, Accept-Ranges and a Content-Type from its extension (Go's
 * table, then the system's shared-mime-info globs or mime.types) or sniffed
 * from its first 512 bytes; If-Modified-Since is honoured; a missing path is
 * 404, an unreadable one 403. Like the kubelet's (`http.Dir`), symbolic links
 * are followed. Byte ranges are not served: the whole file is (a client may
 * ignore Accept-Ranges; Go would answer 206).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

export const NODE_LOG_DIR = '/var/log';

/** Go's built-in extension table (mime/type.go). */
const BUILTIN_TYPES: Readonly<Record<string, string>> = {
  '.avif': 'image/avif',
  '.css': 'text/css; charset=utf-8',
  '.gif': 'image/gif',
  '.htm': 'text/html; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.jpeg': 'image/jpeg',
  '.jpg': 'image/jpeg',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.mjs': 'text/javascript; charset=utf-8',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.webp': 'image/webp',
  '.xml': 'text/xml; charset=utf-8',
};

const MIME_GLOBS = ['/usr/local/share/mime/globs2', '/usr/share/mime/globs2'];
const MIME_TYPES_FILES = ['/etc/mime.types', '/etc/apache2/mime.types', '/etc/apache/mime.types', '/etc/httpd/conf/mime.types'];

/** text/* gets charset=utf-8, as Go's setExtensionType adds it. */
function withCharset(type: string): string {
  return type.startsWith('text/') && !/;\s*charset=/i.test(type) ? `${type}; charset=utf-8` : type;
}

/**
 * The extension table as Go's mime package builds it on Linux: the built-in one, then the first
 * shared-mime-info globs2 file found (simple `*.ext` globs, the first of each extension, never over
 * a built-in one), or without one every mime.types file. Pure over the texts given (tests).
 */
export function mimeTable(read: (file: string) => string | undefined): Map<string, string> {
  const table = new Map(Object.entries(BUILTIN_TYPES));
  for (const file of MIME_GLOBS) {
    const text = read(file);
    if (text === undefined) continue;
    for (const line of text.split('\n')) {
      if (line.startsWith('#')) continue;
      const [, type, glob] = line.split(':');
      if (type === undefined || glob === undefined || !glob.startsWith('*.')) continue;
      const ext = glob.slice(1);
      if (/[?*[]/.test(ext) || table.has(ext)) continue;
      table.set(ext, withCharset(type));
    }
    return table;
  }
  for (const file of MIME_TYPES_FILES) {
    const text = read(file);
    if (text === undefined) continue;
    for (const line of text.split('\n')) {
      const fields = line.replace(/#.*/, '').trim().split(/\s+/);
      if (fields.length < 2) continue;
      for (const ext of fields.slice(1)) table.set(`.${ext}`, withCharset(fields[0]!));
    }
  }
  return table;
}

/** Go's http.DetectContentType, for what a log directory holds: gzip, HTML, text, else octet-stream. */
export function sniffContentType(head: Buffer): string {
  if (head.length >= 3 && head[0] === 0x1f && head[1] === 0x8b && head[2] === 0x08) return 'application/x-gzip';
  let i = 0;
  while (i < head.length && (head[i] === 0x09 || head[i] === 0x0a || head[i] === 0x0c || head[i] === 0x0d || head[i] === 0x20)) i++;
  const lead = head.subarray(i, i + 16).toString('latin1').toLowerCase();
  if (/^<(!doctype html|html|head|body|script|iframe|h1|div|font|table|a|style|title|b|br|p|!--)[ >]/.test(lead)) return 'text/html; charset=utf-8';
  if (lead.startsWith('<?xml')) return 'text/xml; charset=utf-8';
  if (head.length >= 5 && head.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  for (const b of head) if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return 'application/octet-stream';
  return 'text/plain; charset=utf-8';
}

/** Go's html escaping of a listed name (htmlReplacer). */
function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })[c]!);
}

/** A listed name as a relative URL, as Go's url.URL{Path: name}.String() writes it (a ':' in the first segment gets "./"). */
function hrefOf(name: string): string {
  const encoded = name
    .split('/')
    .map((seg) => encodeURIComponent(seg).replace(/%2C/gi, ',').replace(/%3A/gi, ':').replace(/%40/gi, '@').replace(/%24/gi, '$').replace(/%26/gi, '&').replace(/%2B/gi, '+').replace(/%3D/gi, '='))
    .join('/');
  return encoded.split('/')[0]!.includes(':') ? `./${encoded}` : encoded;
}

/** Go's dirList: the directory's entries sorted by name. */
export function directoryListing(entries: ReadonlyArray<{ name: string; dir: boolean }>): string {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let out = '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n';
  for (const e of sorted) {
    const name = e.dir ? `${e.name}/` : e.name;
    out += `<a href="${hrefOf(name)}">${escapeHtml(name)}</a>\n`;
  }
  return `${out}</pre>\n`;
}

/** HTTP date (Go's TimeFormat: "Mon, 02 Jan 2006 15:04:05 GMT"). */
function httpDate(d: Date): string {
  return d.toUTCString();
}

/** Whether If-Modified-Since says the client's copy is current (whole seconds, as Go compares). */
function notModified(req: IncomingMessage, mtime: Date): boolean {
  const ims = req.headers['if-modified-since'];
  if (ims === undefined || req.headers['if-none-match'] !== undefined) return false;
  const t = Date.parse(ims);
  return Number.isFinite(t) && Math.floor(mtime.getTime() / 1000) * 1000 <= t;
}

function error(res: ServerResponse, status: number, text: string): void {
  const body = `${text}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Content-Type-Options': 'nosniff' });
  res.end(body);
}

function redirect(res: ServerResponse, to: string, query: string): void {
  res.writeHead(301, { Location: query !== '' ? `${to}?${query}` : to, 'Content-Length': 0 });
  res.end();
}

/** `/logs` without its slash: the kubelet's mux sends the client to `/logs/` (Go's http.Redirect, 307). */
export function redirectToLogsRoot(res: ServerResponse, query: string): void {
  const to = query !== '' ? `/logs/?${query}` : '/logs/';
  const body = `<a href="${escapeHtml(to)}">Temporary Redirect</a>.\n\n`;
  res.writeHead(307, { Location: to, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** A method other than GET on /logs/ (go-restful's answer). */
export function logsMethodNotAllowed(res: ServerResponse): void {
  const body = '405: Method Not Allowed';
  res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export interface NodeLogServer {
  /** Serve `rel` (the path after /logs/, decoded, no `.`/`..` segments; '' for the root). */
  serve(req: IncomingMessage, res: ServerResponse, rel: string, query: string): Promise<void>;
}

/** A file server over `root` (default /var/log); the extension table read once, on first use. */
export function nodeLogServer(root = NODE_LOG_DIR): NodeLogServer {
  let types: Map<string, string> | undefined;
  const typeOf = (name: string): string | undefined => {
    types ??= mimeTable((f) => {
      try {
        return fs.readFileSync(f, 'utf8');
      } catch {
        return undefined;
      }
    });
    const ext = path.extname(name);
    return ext === '' ? undefined : (types.get(ext) ?? types.get(ext.toLowerCase()));
  };

  const statusOf = (err: unknown): [number, string] => {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return [404, '404 page not found'];
    if (code === 'EACCES' || code === 'EPERM') return [403, '403 Forbidden'];
    return [500, '500 Internal Server Error'];
  };

  const sendFile = async (req: IncomingMessage, res: ServerResponse, file: string, st: fs.Stats): Promise<void> => {
    if (notModified(req, st.mtime)) {
      res.writeHead(304, { 'Last-Modified': httpDate(st.mtime) });
      res.end();
      return;
    }
    const handle = await fsp.open(file, 'r');
    try {
      let type = typeOf(file);
      if (type === undefined) {
        const head = Buffer.alloc(Math.min(512, st.size));
        const { bytesRead } = await handle.read(head, 0, head.length, 0);
        type = sniffContentType(head.subarray(0, bytesRead));
      }
      res.writeHead(200, { 'Accept-Ranges': 'bytes', 'Content-Length': st.size, 'Content-Type': type, 'Last-Modified': httpDate(st.mtime) });
      // What the file holds as it was stat'ed (a log may grow meanwhile: Content-Length holds).
      await pipeline(handle.createReadStream({ start: 0, end: Math.max(0, st.size - 1), autoClose: false }), res).catch(() => res.destroy());
    } finally {
      await handle.close();
    }
  };

  return {
    async serve(req, res, rel, query) {
      const urlPath = `/${rel}`;
      if (urlPath.endsWith('/index.html')) return redirect(res, './', query);
      // Stat'ed without a trailing slash: a file asked for as a directory is redirected, not ENOTDIR.
      const full = path.join(root, rel).replace(/\/+$/, '') || '/';
      let st: fs.Stats;
      try {
        st = await fsp.stat(full);
      } catch (err) {
        const [status, text] = statusOf(err);
        return error(res, status, text);
      }
      if (st.isDirectory()) {
        if (!urlPath.endsWith('/')) return redirect(res, `${path.posix.basename(urlPath)}/`, query);
        const index = path.join(full, 'index.html');
        const ist = await fsp.stat(index).catch(() => undefined);
        if (ist?.isFile()) return sendFile(req, res, index, ist);
        if (notModified(req, st.mtime)) {
          res.writeHead(304, { 'Last-Modified': httpDate(st.mtime) });
          res.end();
          return;
        }
        let entries: fs.Dirent[];
        try {
          entries = await fsp.readdir(full, { withFileTypes: true });
        } catch {
          return error(res, 500, 'Error reading directory');
        }
        // As Go's ReadDir: the entry's own type (a link to a directory is not listed as one).
        const body = directoryListing(entries.map((e) => ({ name: e.name, dir: e.isDirectory() })));
        res.writeHead(200, { 'Content-Length': Buffer.byteLength(body), 'Content-Type': 'text/html; charset=utf-8', 'Last-Modified': httpDate(st.mtime) });
        res.end(body);
        return;
      }
      if (urlPath.endsWith('/')) {
        const base = path.posix.basename(urlPath);
        return redirect(res, `../${base === '/' || base === '.' ? '' : base}`, query);
      }
      try {
        await sendFile(req, res, full, st);
      } catch (err) {
        if (res.headersSent) return void res.destroy();
        const [status, text] = statusOf(err);
        error(res, status, text);
      }
    },
  };
}
