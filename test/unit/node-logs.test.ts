/**
 * The kubelet server's /logs/ as Go's http.FileServer serves it: the extension table Go's mime
 * package builds on Linux, content sniffing, the directory listing; and the server over a temp dir.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryListing, mimeTable, nodeLogServer, sniffContentType } from '../../src/lib/server/node-logs.js';

describe('mimeTable', () => {
  it("Go's built-in types win; the first glob of an extension in globs2 is taken and mime.types is then not read; text/* gets charset=utf-8", () => {
    const files: Record<string, string> = {
      '/usr/share/mime/globs2': '# comment\n80:text/html:*.html\n50:text/x-log:*.log\n50:application/gzip:*.gz\n40:application/x-other:*.gz\n50:text/x-readme:README*\n',
      '/etc/mime.types': 'application/x-never\tlog gz\n',
    };
    const t = mimeTable((f) => files[f]);
    expect(t.get('.html')).toBe('text/html; charset=utf-8');
    expect(t.get('.log')).toBe('text/x-log; charset=utf-8');
    expect(t.get('.gz')).toBe('application/gzip');
    expect(t.get('.json')).toBe('application/json');
    expect([...t.keys()].some((k) => k.includes('README'))).toBe(false);
  });

  it('without globs2, every mime.types file', () => {
    const t = mimeTable((f) => (f === '/etc/mime.types' ? '# x\napplication/gzip\t\tgz\ntext/plain\ttxt text\n' : undefined));
    expect([t.get('.gz'), t.get('.txt'), t.get('.text')]).toEqual(['application/gzip', 'text/plain; charset=utf-8', 'text/plain; charset=utf-8']);
  });
});

describe('sniffContentType', () => {
  it.each([
    ['plain text', Buffer.from('line one\nline two\n'), 'text/plain; charset=utf-8'],
    ['gzip', Buffer.from([0x1f, 0x8b, 0x08, 0, 0]), 'application/x-gzip'],
    ['html', Buffer.from('  <html><body>'), 'text/html; charset=utf-8'],
    ['binary', Buffer.from([0, 1, 2, 65]), 'application/octet-stream'],
    ['empty', Buffer.alloc(0), 'text/plain; charset=utf-8'],
  ])('%s', (_what, head, type) => {
    expect(sniffContentType(head)).toBe(type);
  });
});

describe('directoryListing', () => {
  it("Go's dirList: sorted, directories with a slash, names escaped, hrefs URL-encoded", () => {
    expect(directoryListing([{ name: 'b.log', dir: false }, { name: 'apt', dir: true }, { name: 'a&b <c>.txt', dir: false }])).toBe(
      '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n<a href="a&b%20%3Cc%3E.txt">a&amp;b &lt;c&gt;.txt</a>\n<a href="apt/">apt/</a>\n<a href="b.log">b.log</a>\n</pre>\n',
    );
  });
});

describe('nodeLogServer', () => {
  let dir: string;
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-nodelogs-'));
    fs.mkdirSync(path.join(dir, 'sub'));
    fs.writeFileSync(path.join(dir, 'app.log'), 'hello\n');
    const logs = nodeLogServer(dir);
    server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      void logs.serve(req, res, decodeURIComponent(u.pathname.slice('/logs/'.length)), u.search.slice(1));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}/logs/`;
  });
  afterAll(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lists, reads, redirects and answers 404 as the kubelet', async () => {
    const list = await fetch(base);
    expect([list.status, list.headers.get('content-type'), await list.text()]).toEqual([
      200,
      'text/html; charset=utf-8',
      '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n<a href="app.log">app.log</a>\n<a href="sub/">sub/</a>\n</pre>\n',
    ]);
    const file = await fetch(`${base}app.log`);
    expect([file.status, file.headers.get('content-length'), await file.text()]).toEqual([200, '6', 'hello\n']);
    const noSlash = await fetch(`${base}sub`, { redirect: 'manual' });
    expect([noSlash.status, noSlash.headers.get('location')]).toEqual([301, 'sub/']);
    const slash = await fetch(`${base}app.log/`, { redirect: 'manual' });
    expect([slash.status, slash.headers.get('location')]).toEqual([301, '../app.log']);
    const missing = await fetch(`${base}nope`);
    expect([missing.status, await missing.text()]).toEqual([404, '404 page not found\n']);
    const since = await fetch(`${base}app.log`, { headers: { 'If-Modified-Since': new Date(Date.now() + 60_000).toUTCString() } });
    expect(since.status).toBe(304);
  });
});
