/**
 * A small image registry on loopback for tests that need real pulls: the
 * read side of the distribution API (GET /v2/, manifests and blobs by tag or
 * digest, HEAD too), serving OCI layout archives built with buildOciImage.
 * containerd's CRI plugin pulls from a localhost registry over plain HTTP
 * without any configuration.
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';
import { buildOciImage, type ImageSpec } from '../../src/lib/runtime/oci-image.js';

export interface TestRegistry {
  /** `127.0.0.1:PORT`: image references are `${host}/repo:tag`. */
  host: string;
  /** Build an image from `spec` and serve it as `${host}/${repo}:${tag}`; returns the reference and the image ID. */
  push(repo: string, tag: string, spec: Omit<ImageSpec, 'name'>): Promise<{ ref: string; imageId: string }>;
  /** Requests for manifests, by `repo:reference` (a pull asks at least once). */
  manifestRequests: string[];
  close(): Promise<void>;
}

interface Blob {
  data: Buffer;
  mediaType?: string;
}

async function readArchive(file: string): Promise<{ blobs: Map<string, Buffer>; index: { manifests: { digest: string; mediaType: string }[] } }> {
  const blobs = new Map<string, Buffer>();
  let index: { manifests: { digest: string; mediaType: string }[] } = { manifests: [] };
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        const data = Buffer.concat(chunks);
        const name = header.name.replace(/^\.\//, '');
        if (name === 'index.json') index = JSON.parse(data.toString('utf8')) as typeof index;
        const m = /^blobs\/sha256\/([0-9a-f]{64})$/.exec(name);
        if (m) blobs.set(`sha256:${m[1]}`, data);
        next();
      });
      stream.resume();
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  extract.end(await fs.readFile(file));
  await done;
  return { blobs, index };
}

export async function startTestRegistry(): Promise<TestRegistry> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'klet-registry-'));
  const blobs = new Map<string, Blob>();
  const tags = new Map<string, string>();
  const manifestRequests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, blob?: Blob, digest?: string) => {
      const headers: Record<string, string> = { 'Docker-Distribution-API-Version': 'registry/2.0' };
      if (blob) {
        headers['Content-Length'] = String(blob.data.length);
        headers['Content-Type'] = blob.mediaType ?? 'application/octet-stream';
        if (digest) headers['Docker-Content-Digest'] = digest;
      }
      res.writeHead(status, headers);
      res.end(req.method === 'HEAD' || !blob ? undefined : blob.data);
    };
    if (url.pathname === '/v2/' || url.pathname === '/v2') return send(200, { data: Buffer.from('{}'), mediaType: 'application/json' });
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(url.pathname);
    if (!m) return send(404);
    const [, repo, kind, reference] = m as unknown as [string, string, string, string];
    if (kind === 'manifests') manifestRequests.push(`${repo}:${reference}`);
    const digest = kind === 'manifests' && !reference.startsWith('sha256:') ? tags.get(`${repo}:${reference}`) : reference;
    const blob = digest === undefined ? undefined : blobs.get(digest);
    return blob ? send(200, blob, digest) : send(404);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    host,
    manifestRequests,
    async push(repo, tag, spec) {
      const ref = `${host}/${repo}:${tag}`;
      const built = await buildOciImage({ ...spec, name: ref, outFile: path.join(dir, `${repo.replace(/\//g, '_')}-${tag}.tar`) });
      const { blobs: content, index } = await readArchive(built.file);
      for (const [d, data] of content) blobs.set(d, { data });
      for (const mf of index.manifests) {
        const b = blobs.get(mf.digest);
        if (b) b.mediaType = mf.mediaType;
        tags.set(`${repo}:${tag}`, mf.digest);
      }
      return { ref, imageId: built.configDigest };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
