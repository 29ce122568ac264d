import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync } from 'node:fs';
import net from 'node:net';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import tar, { type Header } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/lib/errors.js';
import { importImageArchive, inspectImageArchive, planImport } from '../../src/lib/runtime/images.js';
import {
  ANNOTATION_REF_NAME,
  MEDIA_TYPE_CONFIG,
  MEDIA_TYPE_LAYER_GZIP,
  MEDIA_TYPE_MANIFEST,
  PAUSE_SCRIPT,
  buildOciImage,
  busyboxImageSpec,
  imageSpecDigest,
  ociArchitecture,
  pauseImageSpec,
  buildPauseBinary,
  elfHasInterpreter,
  type BuildOciImageOptions,
  type LayerEntry,
} from '../../src/lib/runtime/oci-image.js';
import { canonicalImageName } from '../../src/lib/image/reference.js';

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

interface Member {
  header: Header;
  data: Buffer;
}

/** Every member of a tar buffer, in order. */
async function untar(buf: Buffer): Promise<Member[]> {
  const extract = tar.extract();
  const out: Member[] = [];
  const done = (async () => {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      for await (const c of entry) chunks.push(c as Buffer);
      out.push({ header: entry.header, data: Buffer.concat(chunks) });
    }
  })();
  extract.end(buf);
  await done;
  return out;
}

async function makeTar(members: Array<{ name: string; data?: string; type?: Header['type'] }>): Promise<Buffer> {
  const pack = tar.pack();
  for (const m of members) {
    if (m.data === undefined) pack.entry({ name: m.name, type: m.type ?? 'directory' });
    else pack.entry({ name: m.name }, m.data);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const files: LayerEntry[] = [
  { path: '/bin/hello', mode: 0o755, content: Buffer.from('#!/bin/sh\necho hello\n') },
  { path: 'bin/hi', symlink: 'hello' },
  { path: 'tmp', dir: true, mode: 0o1777 },
  { path: 'etc/motd', content: Buffer.from('welcome\n') },
];
const config = {
  entrypoint: ['/bin/hello'],
  cmd: ['--loud'],
  env: ['PATH=/bin', 'A=1'],
  workingDir: '/tmp',
  labels: { b: '2', a: '1' },
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'klet-oci-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function opts(outName: string, over: Partial<BuildOciImageOptions> = {}): BuildOciImageOptions {
  return { name: 'localhost/klet/test:1.0', files, config, outFile: path.join(dir, outName), ...over };
}

describe('buildOciImage', () => {
  it('writes a valid OCI image layout whose digests, sizes and diff_id all check out', async () => {
    const built = await buildOciImage(opts('a.tar'));
    const archive = await readFile(built.file);
    expect(built.size).toBe(archive.length);
    const members = await untar(archive);
    const byName = new Map(members.map((m) => [m.header.name.replace(/\/$/, ''), m]));

    expect(JSON.parse(byName.get('oci-layout')!.data.toString())).toEqual({ imageLayoutVersion: '1.0.0' });
    const index = JSON.parse(byName.get('index.json')!.data.toString());
    expect(index.schemaVersion).toBe(2);
    expect(index.manifests).toHaveLength(1);
    const desc = index.manifests[0];
    expect(desc.mediaType).toBe(MEDIA_TYPE_MANIFEST);
    expect(desc.annotations[ANNOTATION_REF_NAME]).toBe('localhost/klet/test:1.0');
    expect(desc.platform).toEqual({ architecture: ociArchitecture(), os: 'linux' });

    const blob = (digest: string): Buffer => {
      const m = byName.get(`blobs/sha256/${digest.replace('sha256:', '')}`);
      expect(m, `blob ${digest}`).toBeDefined();
      expect(sha256(m!.data)).toBe(digest);
      return m!.data;
    };
    const manifestBytes = blob(desc.digest);
    expect(manifestBytes.length).toBe(desc.size);
    expect(desc.digest).toBe(built.manifestDigest);
    const manifest = JSON.parse(manifestBytes.toString());
    expect(manifest.schemaVersion).toBe(2);
    expect(manifest.config.mediaType).toBe(MEDIA_TYPE_CONFIG);
    expect(manifest.config.digest).toBe(built.configDigest);
    const configBytes = blob(manifest.config.digest);
    expect(configBytes.length).toBe(manifest.config.size);

    expect(manifest.layers).toHaveLength(1);
    const [layerDesc] = manifest.layers;
    expect(layerDesc.mediaType).toBe(MEDIA_TYPE_LAYER_GZIP);
    expect(layerDesc.digest).toBe(built.layerDigest);
    const layer = blob(layerDesc.digest);
    expect(layer.length).toBe(layerDesc.size);
    expect(layer.readUInt32LE(4)).toBe(0); // gzip header mtime

    const image = JSON.parse(configBytes.toString());
    expect(image.architecture).toBe(process.arch === 'x64' ? 'amd64' : ociArchitecture());
    expect(image.os).toBe('linux');
    expect(image.config).toEqual({
      Env: ['PATH=/bin', 'A=1'],
      Entrypoint: ['/bin/hello'],
      Cmd: ['--loud'],
      WorkingDir: '/tmp',
      Labels: { a: '1', b: '2' },
    });
    const layerTar = gunzipSync(layer);
    expect(image.rootfs).toEqual({ type: 'layers', diff_ids: [sha256(layerTar)] });
    expect(built.diffId).toBe(sha256(layerTar));

    const entries = await untar(layerTar);
    const summary = entries.map((e) => [e.header.name, e.header.type, (e.header.mode ?? 0).toString(8)]);
    expect(summary).toEqual([
      ['bin/', 'directory', '755'],
      ['bin/hello', 'file', '755'],
      ['bin/hi', 'symlink', '777'],
      ['etc/', 'directory', '755'],
      ['etc/motd', 'file', '644'],
      ['tmp/', 'directory', '1777'],
    ]);
    for (const e of entries) {
      expect(e.header.mtime?.getTime()).toBe(0);
      expect(e.header.uid).toBe(0);
      expect(e.header.gid).toBe(0);
    }
    expect(entries.find((e) => e.header.name === 'bin/hi')?.header.linkname).toBe('hello');
    expect(entries.find((e) => e.header.name === 'etc/motd')?.data.toString()).toBe('welcome\n');
  });

  it('is reproducible: the same input, in any order, gives the same bytes and digests', async () => {
    const a = await buildOciImage(opts('r1.tar'));
    const b = await buildOciImage(opts('r2.tar', { files: [...files].reverse(), config: { ...config, labels: { a: '1', b: '2' } } }));
    expect(b.configDigest).toBe(a.configDigest);
    expect(b.manifestDigest).toBe(a.manifestDigest);
    expect(b.layerDigest).toBe(a.layerDigest);
    expect((await readFile(b.file)).equals(await readFile(a.file))).toBe(true);
    expect(await imageSpecDigest({ name: 'localhost/klet/test:1.0', files, config })).toBe(
      await imageSpecDigest({ name: 'localhost/klet/test:1.0', files: [...files].reverse(), config }),
    );

    const changed = await buildOciImage(opts('r3.tar', { config: { ...config, cmd: ['--quiet'] } }));
    expect(changed.configDigest).not.toBe(a.configDigest);
    expect(changed.diffId).toBe(a.diffId);
  });

  it('reads file content from disk and normalizes the name', async () => {
    const src = path.join(dir, 'payload.bin');
    const payload = randomBytes(70_000);
    await writeFile(src, payload);
    const built = await buildOciImage(opts('f.tar', { name: 'busybox', files: [{ path: 'data/p.bin', content: { fromFile: src } }] }));
    expect(built.name).toBe('localhost/busybox:latest');
    const members = await untar(await readFile(built.file));
    const layer = members.find((m) => m.header.name === `blobs/sha256/${built.layerDigest.slice(7)}`)!;
    const entries = await untar(gunzipSync(layer.data));
    expect(entries.find((e) => e.header.name === 'data/p.bin')?.data.equals(payload)).toBe(true);
  });

  it('refuses bad layer paths and names', async () => {
    await expect(buildOciImage(opts('x.tar', { files: [{ path: '../etc/x', content: Buffer.from('') }] }))).rejects.toThrow(InputError);
    await expect(
      buildOciImage(opts('x.tar', { files: [{ path: 'a', content: Buffer.from('') }, { path: '/a', dir: true }] })),
    ).rejects.toThrow(/duplicate layer path "a"/);
    await expect(
      buildOciImage(opts('x.tar', { files: [{ path: 'a', content: Buffer.from('') }, { path: 'a/b', dir: true }] })),
    ).rejects.toThrow(/not a directory/);
    await expect(buildOciImage(opts('x.tar', { name: 'Bad Name' }))).rejects.toThrow(/invalid image name/);
    expect(existsSync(path.join(dir, 'x.tar'))).toBe(false);
  });
});

describe('canonicalImageName', () => {
  it('adds localhost/ and :latest, and keeps registry hosts', () => {
    expect(canonicalImageName('busybox')).toBe('localhost/busybox:latest');
    expect(canonicalImageName('busybox:1.36')).toBe('localhost/busybox:1.36');
    expect(canonicalImageName('klet/pause:3.10')).toBe('localhost/klet/pause:3.10');
    expect(canonicalImageName('localhost/klet/pause:3.10')).toBe('localhost/klet/pause:3.10');
    expect(canonicalImageName('registry.example:5000/a/b')).toBe('registry.example:5000/a/b:latest');
    expect(() => canonicalImageName('a@sha256:abc')).toThrow(/digest/);
    expect(() => canonicalImageName('UPPER')).toThrow(/path component/);
    expect(() => canonicalImageName('a:b:c')).toThrow(InputError);
  });
});

describe('inspectImageArchive', () => {
  let good: string;
  beforeAll(async () => {
    good = (await buildOciImage(opts('good.tar'))).file;
  });

  it('returns the names an archive carries, for plain and gzip-compressed tars', async () => {
    const info = await inspectImageArchive(good);
    expect(info.compression).toBe('none');
    expect(info.layoutVersion).toBe('1.0.0');
    expect(info.refs).toEqual(['localhost/klet/test:1.0']);
    expect(info.manifests).toHaveLength(1);

    const gz = path.join(dir, 'good.tar.gz');
    await writeFile(gz, gzipSync(await readFile(good)));
    const gzInfo = await inspectImageArchive(gz);
    expect(gzInfo.compression).toBe('gzip');
    expect(gzInfo.refs).toEqual(info.refs);
  });

  const rejects = async (file: string, why: RegExp): Promise<void> => {
    const err = await inspectImageArchive(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InputError);
    const msg = (err as Error).message;
    expect(msg.startsWith(`images import: ${file}: `), msg).toBe(true);
    expect(msg).toMatch(why);
  };

  it('rejects a missing file', async () => {
    await rejects(path.join(dir, 'nope.tar'), /no such file/);
  });

  it('rejects a random file', async () => {
    const f = path.join(dir, 'random.bin');
    await writeFile(f, randomBytes(4096));
    await rejects(f, /not a tar archive/);
  });

  it('rejects short and empty files, and directories', async () => {
    const short = path.join(dir, 'short.txt');
    await writeFile(short, 'hello\n');
    await rejects(short, /not a tar archive/);
    const empty = path.join(dir, 'empty.tar');
    await writeFile(empty, '');
    await rejects(empty, /empty file/);
    const sub = path.join(dir, 'adir.tar');
    await mkdir(sub);
    await rejects(sub, /directory/);
  });

  it('rejects an empty tar', async () => {
    const f = path.join(dir, 'empty-archive.tar');
    await writeFile(f, Buffer.alloc(1024));
    await rejects(f, /empty tar archive/);
  });

  it('rejects a tar without oci-layout, and a docker-save one with a hint', async () => {
    const f = path.join(dir, 'plain.tar');
    await writeFile(f, await makeTar([{ name: 'etc' }, { name: 'etc/hosts', data: '127.0.0.1 localhost\n' }]));
    await rejects(f, /not an OCI image layout archive \(no oci-layout file\)/);

    const d = path.join(dir, 'docker.tar');
    await writeFile(d, await makeTar([{ name: 'manifest.json', data: '[]' }]));
    const err = await inspectImageArchive(d).catch((e: unknown) => e);
    expect((err as InputError).suggestions.join(' ')).toMatch(/docker-save/);
  });

  it('rejects a layout whose index names a missing blob, or has no index', async () => {
    const layout = { name: 'oci-layout', data: '{"imageLayoutVersion":"1.0.0"}' };
    const noIndex = path.join(dir, 'noindex.tar');
    await writeFile(noIndex, await makeTar([layout]));
    await rejects(noIndex, /no index\.json/);
    const missing = path.join(dir, 'missing-blob.tar');
    const digest = `sha256:${'ab'.repeat(32)}`;
    await writeFile(
      missing,
      await makeTar([layout, { name: 'index.json', data: JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: MEDIA_TYPE_MANIFEST, digest, size: 1 }] }) }]),
    );
    await rejects(missing, /no blobs\/sha256\/abab/);
  });

  it('rejects a corrupt gzip file', async () => {
    const f = path.join(dir, 'bad.tar.gz');
    await writeFile(f, Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), randomBytes(200)]));
    await rejects(f, /gzip|not a tar archive/);
  });
});

describe('planImport', () => {
  const file = '/x/img.tar';
  const m = (refName?: string) => ({ digest: 'sha256:00', mediaType: MEDIA_TYPE_MANIFEST, ...(refName !== undefined && { refName }) });

  it('uses the full name an archive carries; no index name when the manifest gets that name', () => {
    // An --index-name equal to a manifest's name made ctr 1.6 set the name
    // twice (index, then manifest) and fail now and then with "content digest
    // <index>: not found" when containerd collected the orphaned index.
    expect(planImport({ file, manifests: [m('localhost/klet/busybox:1.36')] })).toEqual({
      name: 'localhost/klet/busybox:1.36',
      baseName: 'localhost/klet/busybox',
      refs: ['localhost/klet/busybox:1.36'],
    });
    expect(planImport({ file, manifests: [m('busybox:1.0')] }).name).toBe('localhost/busybox:1.0');
  });

  it('lets a given name win, and predicts the extra names ctr makes', () => {
    expect(planImport({ file, manifests: [m('localhost/klet/busybox:1.36')] }, 'mine:2')).toEqual({
      name: 'localhost/mine:2',
      indexName: 'localhost/mine:2',
      baseName: 'localhost/mine',
      refs: ['localhost/mine:2'],
    });
    expect(planImport({ file, manifests: [m('1.0')] }, 'mine')).toEqual({
      name: 'localhost/mine:1.0',
      baseName: 'localhost/mine',
      refs: ['localhost/mine:1.0'],
    });
    const two = planImport({ file, manifests: [m('1.0')] }, 'mine:2');
    expect(two.refs).toEqual(['localhost/mine:2', 'localhost/mine:1.0']);
    expect(two.indexName).toBe('localhost/mine:2');
  });

  it('asks for a name when the archive has none or only a tag', () => {
    expect(() => planImport({ file, manifests: [m()] })).toThrow(/images import: \/x\/img\.tar: the archive does not name its image/);
    expect(() => planImport({ file, manifests: [m('1.0')] })).toThrow(/names only the tag "1.0"/);
  });
});

describe('importImageArchive: the ctr command line', () => {
  // A recording stand-in for ctr (the real import runs against containerd in
  // test/integration/cli-runtime.test.ts); this checks the arguments only.
  async function argvOf(name?: string): Promise<string[]> {
    const archive = (await buildOciImage(opts(`imp-${name ?? 'own'}.tar`))).file;
    const log = path.join(dir, `argv-${name ?? 'own'}`);
    const fake = path.join(dir, `ctr-${name ?? 'own'}`);
    await writeFile(fake, `#!/bin/sh\nprintf '%s\\n' "$@" > ${log}\n`);
    chmodSync(fake, 0o755);
    const sock = path.join(dir, `sock-${name ?? 'own'}`);
    const server = net.createServer().listen(sock);
    await new Promise((r) => server.once('listening', r));
    try {
      await importImageArchive({ address: sock, file: archive, ctrPath: fake, ...(name !== undefined && { name }) });
    } finally {
      server.close();
    }
    return (await readFile(log, 'utf8')).trim().split('\n');
  }

  it('passes no --index-name when the manifest already gets the name (ctr 1.6 would set it twice and could lose the index)', async () => {
    const argv = await argvOf();
    expect(argv).toEqual(['-a', expect.any(String), '-n', 'k8s.io', 'images', 'import', '--base-name', 'localhost/klet/test', expect.stringMatching(/imp-own\.tar$/)]);
  });

  it('passes --index-name for a name the archive does not carry', async () => {
    const argv = await argvOf('mine:2');
    expect(argv.slice(4, 9)).toEqual(['images', 'import', '--base-name', 'localhost/mine', '--index-name']);
    expect(argv[9]).toBe('localhost/mine:2');
  });
});

// busybox-static is installed by scripts/install-deps.sh (run by the README's
// test command and .ci/run): without it these tests fail, they never skip.
describe('built-in image specs', () => {
  it('finds busybox-static on this machine', () => {
    const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((f) => existsSync(f));
    expect(busybox, 'busybox-static is not installed: run scripts/install-deps.sh').toBeDefined();
  });

  it('busybox: every applet as a symlink in /bin, users, /tmp', async () => {
    const spec = await busyboxImageSpec();
    const byPath = new Map(spec.files.map((f) => [f.path, f]));
    expect(byPath.get('bin/sh')).toEqual({ path: 'bin/sh', symlink: 'busybox' });
    expect(byPath.get('bin/ls')).toEqual({ path: 'bin/ls', symlink: 'busybox' });
    expect(byPath.has('bin/busybox')).toBe(true);
    expect(byPath.get('tmp')).toMatchObject({ dir: true, mode: 0o1777 });
    const passwd = byPath.get('etc/passwd');
    expect(passwd && 'content' in passwd && Buffer.isBuffer(passwd.content) && passwd.content.toString()).toMatch(
      /^root:x:0:0:.*\nnobody:x:65534:65534:/,
    );
    expect(spec.config.cmd).toEqual(['sh']);
    expect(spec.name).toBe('localhost/klet/busybox:1.36');
  });

  it('pause: a static binary compiled from C (the host has cc and libc6-dev: install-deps installs them), alone as /pause', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'klet-pause-'));
    try {
      const bin = await buildPauseBinary(dir);
      expect(bin).not.toBeNull();
      expect(await elfHasInterpreter(bin as string)).toBe(false);
      // Built once: the same file again.
      expect(await buildPauseBinary(dir)).toBe(bin);
      const spec = await pauseImageSpec(undefined, { pauseBinary: bin });
      expect(spec.files.map((f) => f.path)).toEqual(['pause']);
      expect(spec.config.entrypoint).toEqual(['/pause']);
      // No compiler: null, and the image falls back to the shell loop.
      expect(await buildPauseBinary(path.join(dir, 'other'), { cc: '/nonexistent/cc' })).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('pause without a compiled binary: a trapping shell loop as entrypoint', async () => {
    const spec = await pauseImageSpec();
    expect(spec.name).toBe('localhost/klet/pause:3.10');
    expect(spec.config.entrypoint).toEqual(['/bin/sh', '-c', PAUSE_SCRIPT]);
    expect(spec.files.map((f) => f.path)).toEqual(expect.arrayContaining(['bin/busybox', 'bin/sh', 'bin/sleep']));
  });
});
