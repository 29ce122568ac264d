/**
 * Build OCI image layout archives in Node, without umoci, docker or a registry.
 *
 * No image can be pulled on the machines klet runs on, so klet makes the few
 * images it needs itself (the sandbox "pause" image and a busybox image) and
 * imports them into containerd (see images.ts). An archive is a tar of an OCI
 * image layout: `oci-layout`, `index.json` and `blobs/sha256/<hex>` holding one
 * image manifest, one image config and ONE gzip-compressed layer.
 *
 * Builds are reproducible: layer entries are sorted, have fixed owners and
 * mtimes, and every JSON document is written with a fixed key order, so the
 * same input always gives the same diff_id and thus the same config digest,
 * which is the image ID containerd and CRI report. (The compressed layer's
 * digest depends on zlib's output too and is stable for a given Node build.)
 * Content is held in memory: klet's images are a few megabytes.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { open, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import tar, { type Header } from 'tar-stream';
import { InputError, KletError, MissingDependencyError, errorMessage } from '../errors.js';
import { BUSYBOX_IMAGE, PAUSE_IMAGE } from './containerd-config.js';
import { canonicalImageName } from '../image/reference.js';

const gzip = promisify(gzipCallback);
const execFileAsync = promisify(execFile);

export const MEDIA_TYPE_INDEX = 'application/vnd.oci.image.index.v1+json';
export const MEDIA_TYPE_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const MEDIA_TYPE_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const MEDIA_TYPE_LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
/** Index-descriptor annotation carrying the image's name (OCI image-layout spec). */
export const ANNOTATION_REF_NAME = 'org.opencontainers.image.ref.name';
/** containerd's own name annotation (`ctr images export` writes it); preferred by `ctr images import`. */
export const ANNOTATION_CONTAINERD_NAME = 'io.containerd.image.name';
export const OCI_LAYOUT_VERSION = '1.0.0';

/**
 * mtime of every layer and archive entry. The epoch rather than "now" so
 * that a rebuild gives byte-identical content.
 */
const FIXED_MTIME = new Date(0);

/** OCI `architecture` of a Node `process.arch` (GOARCH spelling). */
export function ociArchitecture(arch: string = process.arch): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    ia32: '386',
    arm64: 'arm64',
    arm: 'arm',
    ppc64: 'ppc64le', // Node on Linux/ppc64 is little-endian only
    s390x: 's390x',
    riscv64: 'riscv64',
    loong64: 'loong64',
    mips64el: 'mips64le',
  };
  return map[arch] ?? arch;
}

// ---------------------------------------------------------------------------
// Layers

interface LayerEntryBase {
  /** Path inside the image; a leading `/` is optional. */
  path: string;
}
/** A regular file; mode defaults to 0644. */
export interface LayerFile extends LayerEntryBase {
  mode?: number;
  uid?: number;
  gid?: number;
  content: Buffer | { fromFile: string };
}
/** A symbolic link to `symlink` (kept as given: relative or absolute). */
export interface LayerSymlink extends LayerEntryBase {
  symlink: string;
}
/** A directory; mode defaults to 0755 (give 0o1777 for /tmp). */
export interface LayerDir extends LayerEntryBase {
  dir: true;
  mode?: number;
  uid?: number;
  gid?: number;
}
export type LayerEntry = LayerFile | LayerSymlink | LayerDir;

/** The runtime part of the image config (`config` in the OCI image config). */
export interface ImageConfigInput {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  labels?: Record<string, string>;
  user?: string;
}

/** What {@link buildOciImage} needs besides the output file. */
export interface ImageSpec {
  /** Image name, e.g. `localhost/klet/busybox:1.36`; normalized with {@link canonicalImageName}. */
  name: string;
  files: LayerEntry[];
  config: ImageConfigInput;
}

export interface BuildOciImageOptions extends ImageSpec {
  /** Where the archive is written (atomically: a temp file next to it, then rename). */
  outFile: string;
}

export interface BuiltOciImage {
  /** Absolute path of the archive. */
  file: string;
  /** The normalized name written into index.json. */
  name: string;
  manifestDigest: string;
  /** The config digest, which containerd and CRI report as the image ID. */
  configDigest: string;
  layerDigest: string;
  /** sha256 of the uncompressed layer tar (rootfs.diff_ids[0]). */
  diffId: string;
  /** Size of the archive in bytes. */
  size: number;
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

function isFile(e: LayerEntry): e is LayerFile {
  return 'content' in e;
}
function isSymlink(e: LayerEntry): e is LayerSymlink {
  return 'symlink' in e;
}

/** `/bin/sh` and `./bin/sh` → `bin/sh`; refuses escapes and the root itself. */
function entryPath(p: string): string {
  const clean = path.posix.normalize(`/${p}`).slice(1).replace(/\/+$/, '');
  if (clean === '' || p.split('/').includes('..')) {
    throw new InputError(`invalid layer path ${JSON.stringify(p)}`);
  }
  // tar-stream falls back to PAX headers for long or non-ASCII names but
  // then still writes a ustar header that cannot hold them; refuse early.
  if (!/^[\x20-\x7e]+$/.test(clean) || !fitsUstar(clean)) {
    throw new InputError(`layer path ${JSON.stringify(p)} is not plain ASCII of at most 100+155 characters`);
  }
  return clean;
}

/** Whether a name fits a ustar header (100-byte name plus 155-byte prefix split at a `/`). */
function fitsUstar(name: string): boolean {
  let rest = name;
  let prefix = '';
  while (rest.length > 100) {
    const i = rest.indexOf('/');
    if (i === -1) return false;
    prefix += (prefix ? '/' : '') + rest.slice(0, i);
    rest = rest.slice(i + 1);
  }
  return prefix.length <= 155;
}

interface TarItem {
  /** What tar-stream's pack.entry() takes: a name and any other header fields. */
  header: Partial<Header> & Pick<Header, 'name'>;
  data?: Buffer;
}

/**
 * The layer's tar entries: paths normalized, missing parent directories
 * added (0755), sorted by path so that input order does not matter and every
 * directory precedes its contents.
 */
async function layerItems(files: LayerEntry[]): Promise<TarItem[]> {
  const byPath = new Map<string, LayerEntry>();
  for (const e of files) {
    const p = entryPath(e.path);
    if (byPath.has(p)) throw new InputError(`duplicate layer path ${JSON.stringify(p)}`);
    byPath.set(p, e);
  }
  for (const p of [...byPath.keys()]) {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      const existing = byPath.get(parent);
      if (existing === undefined) byPath.set(parent, { path: parent, dir: true });
      else if (!('dir' in existing)) throw new InputError(`layer path ${JSON.stringify(parent)} is not a directory but has ${JSON.stringify(p)} below it`);
    }
  }
  // Code-unit order, never localeCompare: the order must not depend on the locale.
  const paths = [...byPath.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const items: TarItem[] = [];
  for (const p of paths) {
    const e = byPath.get(p) as LayerEntry;
    const common = { name: p, mtime: FIXED_MTIME, uname: '', gname: '' };
    if (isSymlink(e)) {
      if (e.symlink === '' || !/^[\x20-\x7e]{1,100}$/.test(e.symlink)) {
        throw new InputError(`symlink target of ${JSON.stringify(p)} must be plain ASCII of 1 to 100 characters`);
      }
      items.push({ header: { ...common, type: 'symlink', linkname: e.symlink, mode: 0o777, uid: 0, gid: 0 } });
    } else if (isFile(e)) {
      const data = Buffer.isBuffer(e.content) ? e.content : await readFile(e.content.fromFile);
      items.push({
        header: { ...common, type: 'file', mode: e.mode ?? 0o644, uid: e.uid ?? 0, gid: e.gid ?? 0, size: data.length },
        data,
      });
    } else {
      // Directories end in `/` as GNU tar and docker write them.
      items.push({ header: { ...common, name: `${p}/`, type: 'directory', mode: e.mode ?? 0o755, uid: e.uid ?? 0, gid: e.gid ?? 0 } });
    }
  }
  return items;
}

/** Write tar items into one buffer. */
async function packTar(items: TarItem[]): Promise<Buffer> {
  const pack = tar.pack();
  const collected = (async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of pack) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  })();
  const written = (async () => {
    for (const { header, data } of items) {
      await new Promise<void>((resolve, reject) => {
        const done = (err?: Error | null): void => (err ? reject(err) : resolve());
        if (data === undefined) pack.entry(header, done);
        else pack.entry(header, data, done);
      });
    }
    pack.finalize();
  })();
  // If packing fails, the reader rejects and `written` may never settle.
  const [buffer] = await Promise.all([collected, written]);
  return buffer;
}

/** JSON with sorted keys for maps the caller supplies (labels), so key order cannot change the digest. */
function sortedRecord(r: Record<string, string> | undefined): Record<string, string> | undefined {
  if (r === undefined) return undefined;
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Build an OCI image layout archive at `outFile` holding one single-layer
 * image named `name`. The index.json descriptor carries the full normalized
 * name in `org.opencontainers.image.ref.name`: with it `ctr images import
 * --base-name REPO` keeps exactly that name and drops it when a different
 * base name is chosen (see images.ts), whereas a bare tag would be glued onto
 * any base name.
 */
export async function buildOciImage(opts: BuildOciImageOptions): Promise<BuiltOciImage> {
  const name = canonicalImageName(opts.name);
  const architecture = ociArchitecture();

  const layerTar = await packTar(await layerItems(opts.files));
  const diffId = sha256(layerTar);
  // Node's gzip header has mtime 0 and no file name, as reproducibility needs.
  const layer = await gzip(layerTar, { level: 9 });
  const layerDigest = sha256(layer);

  const c = opts.config;
  const imageConfig = {
    architecture,
    os: 'linux',
    config: {
      ...(c.user !== undefined && { User: c.user }),
      ...(c.env !== undefined && { Env: c.env }),
      ...(c.entrypoint !== undefined && { Entrypoint: c.entrypoint }),
      ...(c.cmd !== undefined && { Cmd: c.cmd }),
      ...(c.workingDir !== undefined && { WorkingDir: c.workingDir }),
      ...(c.labels !== undefined && { Labels: sortedRecord(c.labels) }),
    },
    rootfs: { type: 'layers', diff_ids: [diffId] },
  };
  const configBlob = Buffer.from(JSON.stringify(imageConfig));
  const configDigest = sha256(configBlob);

  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE_MANIFEST,
    config: { mediaType: MEDIA_TYPE_CONFIG, digest: configDigest, size: configBlob.length },
    layers: [{ mediaType: MEDIA_TYPE_LAYER_GZIP, digest: layerDigest, size: layer.length }],
  };
  const manifestBlob = Buffer.from(JSON.stringify(manifest));
  const manifestDigest = sha256(manifestBlob);

  const index = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE_INDEX,
    manifests: [
      {
        mediaType: MEDIA_TYPE_MANIFEST,
        digest: manifestDigest,
        size: manifestBlob.length,
        platform: { architecture, os: 'linux' },
        annotations: { [ANNOTATION_REF_NAME]: name },
      },
    ],
  };

  const blobs = new Map<string, Buffer>([
    [configDigest, configBlob],
    [layerDigest, layer],
    [manifestDigest, manifestBlob],
  ]);
  const fileItem = (name: string, data: Buffer): TarItem => ({
    header: { name, type: 'file', mode: 0o644, mtime: FIXED_MTIME, size: data.length },
    data,
  });
  const dirItem = (name: string): TarItem => ({ header: { name: `${name}/`, type: 'directory', mode: 0o755, mtime: FIXED_MTIME } });
  const archive = await packTar([
    fileItem('oci-layout', Buffer.from(JSON.stringify({ imageLayoutVersion: OCI_LAYOUT_VERSION }))),
    fileItem('index.json', Buffer.from(JSON.stringify(index))),
    dirItem('blobs'),
    dirItem('blobs/sha256'),
    ...[...blobs.keys()].sort().map((d) => fileItem(`blobs/sha256/${d.slice('sha256:'.length)}`, blobs.get(d) as Buffer)),
  ]);

  const file = path.resolve(opts.outFile);
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, archive);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new KletError(`cannot write image archive ${file}: ${errorMessage(err)}`, { cause: err });
  }
  return { file, name, manifestDigest, configDigest, layerDigest, diffId, size: archive.length };
}

/**
 * A digest of everything that determines an image built from `spec`
 * (file contents included), to cache built archives by: unchanged input,
 * unchanged archive. Cheaper than building, as nothing is compressed.
 */
export async function imageSpecDigest(spec: ImageSpec): Promise<string> {
  const hash = createHash('sha256');
  // Bump when the archive format changes so that old cached archives are rebuilt.
  hash.update(JSON.stringify({ format: 1, name: canonicalImageName(spec.name), arch: ociArchitecture(), config: spec.config }));
  const items = await layerItems(spec.files);
  for (const { header, data } of items) {
    hash.update(JSON.stringify([header.name, header.type, header.mode, header.uid, header.gid, header.linkname ?? null]));
    if (data !== undefined) hash.update(sha256(data));
  }
  return `sha256:${hash.digest('hex')}`;
}

// ---------------------------------------------------------------------------
// The built-in images

export type BuiltinImageKind = 'pause' | 'busybox';
export const BUILTIN_IMAGE_KINDS: readonly BuiltinImageKind[] = ['pause', 'busybox'];
/** Names of the built-in images (the same constants the containerd config uses). */
export const BUILTIN_IMAGE_REFS: Readonly<Record<BuiltinImageKind, string>> = {
  pause: PAUSE_IMAGE,
  busybox: BUSYBOX_IMAGE,
};

/** Label on the built-in images, valued with their kind, so klet can tell them apart from user images. */
export const BUILTIN_LABEL = 'io.klet.builtin';

const DEFAULT_PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The sandbox's process. As PID 1 of its PID namespace it gets no default
 * signal dispositions: a plain `sleep` would ignore SIGTERM, and every pod
 * stop would wait for the runtime's SIGKILL. The trap exits 0 at once; it
 * also kills the current `sleep` in case the sandbox shares the host's PID
 * namespace (then nothing else would). `wait` returns as soon as a trapped
 * signal arrives, and ash's wait also reaps re-parented zombies, which a
 * pause process must do when the pod shares one PID namespace.
 */
export const PAUSE_SCRIPT = "trap 'kill $! 2>/dev/null; exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

const MISSING_BUSYBOX = 'busybox-static is not installed (apt-get install busybox-static)';

/**
 * Whether an ELF file asks for a program interpreter (is dynamically
 * linked); null when the file is not ELF. A dynamic busybox copied into an
 * image without its libc fails with a baffling "no such file or directory".
 */
export async function elfHasInterpreter(file: string): Promise<boolean | null> {
  const fh = await open(file, 'r');
  try {
    const ident = Buffer.alloc(64);
    const { bytesRead } = await fh.read(ident, 0, 64, 0);
    if (bytesRead < 52 || ident.readUInt32BE(0) !== 0x7f454c46) return null;
    const is64 = ident[4] === 2;
    const le = ident[5] === 1;
    const u16 = (b: Buffer, o: number): number => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u32 = (b: Buffer, o: number): number => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
    const phoff = is64 ? Number(le ? ident.readBigUInt64LE(0x20) : ident.readBigUInt64BE(0x20)) : u32(ident, 0x1c);
    const phentsize = u16(ident, is64 ? 0x36 : 0x2a);
    const phnum = u16(ident, is64 ? 0x38 : 0x2c);
    if (phentsize < 4 || phnum === 0 || phnum > 4096) return null;
    const table = Buffer.alloc(phentsize * phnum);
    const read = await fh.read(table, 0, table.length, phoff);
    if (read.bytesRead < table.length) return null;
    const PT_INTERP = 3;
    for (let i = 0; i < phnum; i++) {
      if (u32(table, i * phentsize) === PT_INTERP) return true;
    }
    return false;
  } finally {
    await fh.close();
  }
}

/**
 * The host's static busybox (Debian's busybox-static puts it in /bin and
 * /usr/bin). Throws MissingDependencyError when there is none, or only a
 * dynamically linked one (Debian's plain `busybox` package).
 */
export async function findHostBusybox(candidates: string[] = ['/bin/busybox', '/usr/bin/busybox']): Promise<string> {
  let dynamic: string | undefined;
  for (const file of candidates) {
    try {
      if (!(await stat(file)).isFile()) continue;
      const interp = await elfHasInterpreter(file);
      if (interp === false) return file;
      if (interp === true) dynamic ??= file;
    } catch {
      // not there or unreadable: try the next one
    }
  }
  const why = dynamic === undefined ? '' : ` (${dynamic} is dynamically linked and cannot run inside an image)`;
  throw new MissingDependencyError(`${MISSING_BUSYBOX}${why}`, { suggestions: ['apt-get install busybox-static'] });
}

/** The applet names a busybox binary provides, from `busybox --list`, without `busybox` itself. */
export async function busyboxApplets(busybox: string): Promise<string[]> {
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(busybox, ['--list'], { encoding: 'utf8', maxBuffer: 1 << 20 }));
  } catch (err) {
    throw new KletError(`cannot list the applets of ${busybox}: ${errorMessage(err)}`, { cause: err });
  }
  const names = stdout
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '' && s !== 'busybox' && /^[\w.[\]-]+$/.test(s));
  return [...new Set(names)].sort();
}

/**
 * The sandbox's process as the kubelet's pause image has it: sleep forever,
 * reap every child re-parented to it (it is PID 1 of a pod that shares one
 * PID namespace), and exit 0 at once on SIGTERM or SIGINT. Compiled into a
 * static binary when the image is built (see buildPauseBinary).
 */
export const PAUSE_C_SOURCE = `/* klet's pause: the sandbox's PID 1. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("klet-pause");
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not PID 1\\n", stderr);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0) return 1;
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGCHLD, &sa, NULL) < 0) return 2;
  for (;;) pause();
}
`;

/**
 * Compile {@link PAUSE_C_SOURCE} into a static binary under `cacheDir`
 * (`pause-<hash of the source>`, kept for later builds), with the host's C
 * compiler (`cc -static`, Debian's gcc + libc6-dev). Null when there is no
 * compiler or the build fails: the image then falls back to {@link PAUSE_SCRIPT}.
 */
export async function buildPauseBinary(cacheDir: string, opts: { cc?: string } = {}): Promise<string | null> {
  const key = createHash('sha256').update(PAUSE_C_SOURCE).digest('hex').slice(0, 16);
  const out = path.join(cacheDir, `pause-${key}`);
  if (await stat(out).then((s) => s.isFile() && s.size > 0, () => false)) return out;
  await mkdir(cacheDir, { recursive: true });
  const tmp = `${out}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const src = `${tmp}.c`;
  try {
    await writeFile(src, PAUSE_C_SOURCE);
    await execFileAsync(opts.cc ?? 'cc', ['-static', '-Os', '-s', '-o', tmp, src], { encoding: 'utf8' });
    if ((await elfHasInterpreter(tmp)) !== false) return null;
    await rename(tmp, out);
    return out;
  } catch {
    return null;
  } finally {
    await rm(src, { force: true });
    await rm(tmp, { force: true });
  }
}

/**
 * The sandbox image. With a compiled pause binary (buildPauseBinary): that
 * binary alone, as `/pause`, like the kubelet's pause image. Without one:
 * busybox with only `sh` and `sleep`, running {@link PAUSE_SCRIPT}.
 */
export async function pauseImageSpec(busybox?: string, opts: { pauseBinary?: string | null } = {}): Promise<ImageSpec> {
  if (opts.pauseBinary) {
    return {
      name: PAUSE_IMAGE,
      files: [{ path: 'pause', mode: 0o755, content: { fromFile: opts.pauseBinary } }],
      config: { entrypoint: ['/pause'], workingDir: '/', labels: { [BUILTIN_LABEL]: 'pause' } },
    };
  }
  const bin = busybox ?? (await findHostBusybox());
  return {
    name: PAUSE_IMAGE,
    files: [
      { path: 'bin/busybox', mode: 0o755, content: { fromFile: bin } },
      { path: 'bin/sh', symlink: 'busybox' },
      { path: 'bin/sleep', symlink: 'busybox' },
      { path: 'tmp', dir: true, mode: 0o1777 },
    ],
    config: {
      env: [DEFAULT_PATH_ENV],
      entrypoint: ['/bin/sh', '-c', PAUSE_SCRIPT],
      workingDir: '/',
      labels: { [BUILTIN_LABEL]: 'pause' },
    },
  };
}

const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n';
const GROUP = 'root:x:0:\nnobody:x:65534:\n';

/** A small general-purpose image: busybox, a symlink in /bin for every applet, root and nobody, /tmp. */
export async function busyboxImageSpec(busybox?: string): Promise<ImageSpec> {
  const bin = busybox ?? (await findHostBusybox());
  const applets = await busyboxApplets(bin);
  return {
    name: BUSYBOX_IMAGE,
    files: [
      { path: 'bin/busybox', mode: 0o755, content: { fromFile: bin } },
      ...applets.map((a): LayerSymlink => ({ path: `bin/${a}`, symlink: 'busybox' })),
      { path: 'etc/passwd', mode: 0o644, content: Buffer.from(PASSWD) },
      { path: 'etc/group', mode: 0o644, content: Buffer.from(GROUP) },
      { path: 'root', dir: true, mode: 0o700 },
      { path: 'tmp', dir: true, mode: 0o1777 },
    ],
    config: {
      env: [DEFAULT_PATH_ENV],
      cmd: ['sh'],
      workingDir: '/',
      labels: { [BUILTIN_LABEL]: 'busybox' },
    },
  };
}

export async function builtinImageSpec(kind: BuiltinImageKind, busybox?: string, opts: { pauseBinary?: string | null } = {}): Promise<ImageSpec> {
  switch (kind) {
    case 'pause':
      return pauseImageSpec(busybox, opts);
    case 'busybox':
      return busyboxImageSpec(busybox);
  }
}

/** Build one of the built-in images into `outFile`. */
export async function buildBuiltinImage(kind: BuiltinImageKind, outFile: string): Promise<BuiltOciImage> {
  return buildOciImage({ ...(await builtinImageSpec(kind)), outFile });
}

/**
 * The shared libraries a dynamically linked host binary needs, from `ldd`:
 * absolute paths (the loader included), in the order ldd lists them. A
 * static binary needs none.
 */
export async function sharedLibraries(binary: string): Promise<string[]> {
  if ((await elfHasInterpreter(binary)) !== true) return [];
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync('ldd', [binary], { encoding: 'utf8', maxBuffer: 1 << 20 }));
  } catch (err) {
    throw new KletError(`cannot list the shared libraries of ${binary} with ldd: ${errorMessage(err)}`, { cause: err });
  }
  const libs: string[] = [];
  for (const line of stdout.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m?.[1] && !libs.includes(m[1])) libs.push(m[1]);
  }
  return libs;
}

/**
 * An image that runs one binary of this host (e.g. Debian's etcd from the
 * etcd-server package): the binary at `/usr/local/bin/<name>`, the shared
 * libraries it links at their host paths, /etc/passwd and /tmp. Nothing is
 * pulled: the machine's packages are the image's source.
 */
export async function hostBinaryImageSpec(opts: { name: string; binary: string; entrypoint?: string[] }): Promise<ImageSpec> {
  const st = await stat(opts.binary).catch(() => null);
  if (st === null || !st.isFile()) throw new InputError(`${opts.binary}: no such file`);
  const base = path.basename(opts.binary);
  const libs = await sharedLibraries(opts.binary);
  return {
    name: opts.name,
    files: [
      { path: `usr/local/bin/${base}`, mode: 0o755, content: { fromFile: opts.binary } },
      ...libs.map((lib): LayerFile => ({ path: lib.replace(/^\//, ''), mode: 0o755, content: { fromFile: lib } })),
      { path: 'etc/passwd', mode: 0o644, content: Buffer.from(PASSWD) },
      { path: 'etc/group', mode: 0o644, content: Buffer.from(GROUP) },
      { path: 'tmp', dir: true, mode: 0o1777 },
    ],
    config: { env: [DEFAULT_PATH_ENV], entrypoint: opts.entrypoint ?? [`/usr/local/bin/${base}`], workingDir: '/' },
  };
}
