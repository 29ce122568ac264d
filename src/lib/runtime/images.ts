/**
 * Check OCI image layout archives and import them into containerd with `ctr`.
 *
 * CRI has no import call, so klet shells out to containerd's own `ctr` and
 * imports into the `k8s.io` namespace, where the CRI plugin finds images.
 * Archives are checked in Node first so that a wrong file gets a clear
 * message naming it instead of ctr's low-level error.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { InputError, KletError, MissingDependencyError, errorMessage } from '../errors.js';
import { log } from '../log.js';
import {
  ANNOTATION_CONTAINERD_NAME,
  ANNOTATION_REF_NAME,
  BUILTIN_IMAGE_KINDS,
  BUILTIN_IMAGE_REFS,
  type BuiltinImageKind,
  buildOciImage,
  buildPauseBinary,
  builtinImageSpec,
  imageSpecDigest,
} from './oci-image.js';
import { formatImageRef, imageRepository, parseImageRef } from '../image/reference.js';
import { CRI_NAMESPACE } from '../cri/containerd-events.js';

/** One manifest descriptor of an archive's index.json. */
export interface ArchiveManifest {
  digest: string;
  mediaType: string;
  /** `org.opencontainers.image.ref.name`: a full name or, per OCI custom, only a tag. */
  refName?: string;
  /** `io.containerd.image.name` (written by `ctr images export`). */
  containerdName?: string;
}

export interface ImageArchiveInfo {
  /** Absolute path of the archive. */
  file: string;
  compression: 'none' | 'gzip';
  /** `imageLayoutVersion` of the oci-layout file. */
  layoutVersion: string;
  manifests: ArchiveManifest[];
  /** The names the index carries, in index order: containerd's name annotation, else the OCI ref name. */
  refs: string[];
}

/** Limit on the size of oci-layout and index.json: both are tiny; a huge one is not a layout. */
const MAX_METADATA_BYTES = 4 << 20;

function isErrnoException(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && 'code' in err;
}

function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function stringField(r: Record<string, unknown> | undefined, key: string): string | undefined {
  const v = r?.[key];
  return typeof v === 'string' ? v : undefined;
}

/** Tar member names as a layout path: `./index.json` and `/index.json` → `index.json`. */
function memberName(name: string): string {
  return path.posix.normalize(`/${name}`).slice(1).replace(/\/+$/, '');
}

async function readEntry(entry: AsyncIterable<unknown>, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of entry) {
    const buf = Buffer.from(chunk as Uint8Array);
    size += buf.length;
    if (size <= limit) chunks.push(buf);
  }
  return size <= limit ? Buffer.concat(chunks) : null;
}

/**
 * Check that `file` is a tar (plain or gzip-compressed) of an OCI image
 * layout: an `oci-layout` file with an `imageLayoutVersion`, an `index.json`
 * with at least one manifest, and the blobs those manifests name (ctr itself
 * reads only plain tars; importImageArchive decompresses for it). Anything
 * else is an InputError whose message starts with `CONTEXT: FILE:`. Reads
 * the whole archive once, streaming.
 */
export async function inspectImageArchive(file: string, opts: { context?: string } = {}): Promise<ImageArchiveInfo> {
  const context = opts.context ?? 'images import';
  const abs = path.resolve(file);
  const fail = (why: string, suggestions?: string[]): InputError =>
    new InputError(`${context}: ${file}: ${why}`, suggestions === undefined ? {} : { suggestions });

  let size: number;
  try {
    const st = await stat(abs);
    if (st.isDirectory()) throw fail('is a directory, not an image archive');
    if (!st.isFile()) throw fail('not a regular file');
    size = st.size;
  } catch (err) {
    if (err instanceof InputError) throw err;
    if (isErrnoException(err) && err.code === 'ENOENT') throw fail('no such file');
    throw fail(`cannot read: ${errorMessage(err)}`);
  }
  if (size === 0) throw fail('empty file, not a tar archive');

  // Sniff the compression from the first bytes.
  const head = await readHead(abs, 6);
  let compression: ImageArchiveInfo['compression'] = 'none';
  if (head[0] === 0x1f && head[1] === 0x8b) compression = 'gzip';
  else if (head.readUInt32BE(0) === 0x28b52ffd) throw fail('zstd-compressed archives are not supported; decompress it first (zstd -d)');
  else if (head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]))) {
    throw fail('xz-compressed archives are not supported; decompress it first (xz -d)');
  } else if (head.subarray(0, 3).toString('latin1') === 'BZh') {
    throw fail('bzip2-compressed archives are not supported; decompress it first (bunzip2)');
  }

  const names = new Set<string>();
  let layoutBytes: Buffer | null | undefined;
  let indexBytes: Buffer | null | undefined;
  let entries = 0;

  const extract = tar.extract();
  const source = createReadStream(abs);
  const feeding = compression === 'gzip' ? pipeline(source, createGunzip(), extract) : pipeline(source, extract);
  let feedError: unknown;
  const fed = feeding.catch((err: unknown) => {
    feedError = err;
  });
  try {
    for await (const entry of extract) {
      entries++;
      const name = memberName(entry.header.name);
      if (entry.header.type === 'file' || entry.header.type === 'contiguous-file') names.add(name);
      if (name === 'oci-layout') layoutBytes = await readEntry(entry, MAX_METADATA_BYTES);
      else if (name === 'index.json') indexBytes = await readEntry(entry, MAX_METADATA_BYTES);
      else entry.resume();
    }
  } catch (err) {
    feedError ??= err;
  }
  await fed;
  if (feedError !== undefined) {
    const msg = errorMessage(feedError);
    if (compression === 'gzip' && isErrnoException(feedError) && String(feedError.code).startsWith('Z_')) {
      throw fail(`not a valid gzip stream (${msg})`);
    }
    if (entries === 0) throw fail('not a tar archive');
    throw fail(`corrupt or truncated tar archive (${msg})`);
  }

  if (entries === 0) throw fail('empty tar archive, not an OCI image layout');
  if (layoutBytes === undefined) {
    const hint = names.has('manifest.json')
      ? ['this looks like a docker-save archive; export it in OCI layout form (e.g. `ctr images export` or `skopeo copy ... oci-archive:FILE`)']
      : undefined;
    throw fail('not an OCI image layout archive (no oci-layout file)', hint);
  }
  const layout = parseJson(layoutBytes);
  const layoutVersion = stringField(record(layout), 'imageLayoutVersion');
  if (layoutVersion === undefined) throw fail('not an OCI image layout archive (oci-layout has no imageLayoutVersion)');
  if (indexBytes === undefined) throw fail('not an OCI image layout archive (no index.json)');
  const index = record(parseJson(indexBytes));
  if (index === undefined) throw fail('index.json is not a JSON object');
  const list = index.manifests;
  if (!Array.isArray(list) || list.length === 0) throw fail('index.json lists no manifests');

  const manifests: ArchiveManifest[] = [];
  for (const item of list) {
    const d = record(item);
    const digest = stringField(d, 'digest');
    const mediaType = stringField(d, 'mediaType');
    if (digest === undefined || mediaType === undefined || !/^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(digest)) {
      throw fail('index.json has a manifest descriptor without a valid digest and mediaType');
    }
    const [alg, hex] = digest.split(':') as [string, string];
    if (!names.has(`blobs/${alg}/${hex}`)) throw fail(`index.json names ${digest}, but the archive has no blobs/${alg}/${hex}`);
    const annotations = record(d?.annotations);
    const refName = stringField(annotations, ANNOTATION_REF_NAME);
    const containerdName = stringField(annotations, ANNOTATION_CONTAINERD_NAME);
    manifests.push({
      digest,
      mediaType,
      ...(refName !== undefined && refName !== '' && { refName }),
      ...(containerdName !== undefined && containerdName !== '' && { containerdName }),
    });
  }
  const refs = manifests.flatMap((m) => {
    const ref = m.containerdName ?? m.refName;
    return ref === undefined ? [] : [ref];
  });
  return { file: abs, compression, layoutVersion, manifests, refs };

  function parseJson(bytes: Buffer | null): unknown {
    if (bytes === null) throw fail('not an OCI image layout archive (oversized metadata file)');
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw fail(`not an OCI image layout archive (invalid JSON: ${errorMessage(err)})`);
    }
  }
}

async function readHead(file: string, n: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of createReadStream(file, { start: 0, end: n - 1 })) chunks.push(chunk as Buffer);
  const buf = Buffer.concat(chunks);
  return buf.length >= n ? buf : Buffer.concat([buf, Buffer.alloc(n - buf.length)]);
}

/** How an archive will be named on import. */
export interface ImportPlan {
  /** The image's name: the name klet reports. */
  name: string;
  /**
   * The `--index-name`, when `name` is not already one of the names ctr gives
   * the archive's manifests (then the image is that manifest, and no index
   * name is passed: see importImageArchive).
   */
  indexName?: string;
  /** The `--base-name`: the name's repository. */
  baseName: string;
  /** Every name `ctr images import` will create or update (the index name first). */
  refs: string[];
}

/**
 * Decide the name of an imported archive, and predict every name ctr 1.6
 * creates for it:
 *
 * - `name` wins when given. Without a tag it takes the archive's tag if the
 *   archive names exactly one tag-only ref, else `latest`.
 * - Otherwise the first manifest's name in the archive is used: containerd's
 *   `io.containerd.image.name`, else `org.opencontainers.image.ref.name` if it
 *   is a full name (has `/` or `:`). A name without a registry part gets
 *   `localhost/` (`busybox:1.36` → `localhost/busybox:1.36`).
 * - A tag-only ref name (`1.36`, the OCI custom) says nothing about the
 *   repository, and an archive without names says nothing at all: both need
 *   `name`, rather than a guess from the file name.
 *
 * ctr is always given `--base-name` (the repository), and `--index-name`
 * (the full name) unless a manifest already gets that name: with
 * `--index-name` alone it names manifests `import-DATE:TAG`, and CRI keeps
 * resolving to that broken name. With a base
 * name ctr also names each manifest from its annotations: containerd's name
 * annotation as it is, a full OCI ref name only when it starts with the base
 * name, and a tag-only one as BASE:TAG.
 */
export function planImport(info: Pick<ImageArchiveInfo, 'file' | 'manifests'>, name?: string, context = 'images import'): ImportPlan {
  const tagOnly = (ref: string): boolean => !/[/:@]/.test(ref);
  const archiveTags = [...new Set(info.manifests.flatMap((m) => (m.refName !== undefined && tagOnly(m.refName) ? [m.refName] : [])))];
  let chosen: string;
  if (name !== undefined) {
    const ref = parseImageRef(name);
    chosen = formatImageRef(ref.tag === undefined && archiveTags.length === 1 ? { ...ref, tag: archiveTags[0] } : ref);
  } else {
    const first = info.manifests.find((m) => m.containerdName !== undefined || m.refName !== undefined);
    const ref = first?.containerdName ?? first?.refName;
    if (ref === undefined) {
      throw new InputError(`${context}: ${info.file}: the archive does not name its image (no ${ANNOTATION_REF_NAME} annotation)`, {
        suggestions: ['give the image a name (NAME[:TAG])'],
      });
    }
    if (tagOnly(ref)) {
      throw new InputError(`${context}: ${info.file}: the archive names only the tag ${JSON.stringify(ref)}, not the image`, {
        suggestions: [`give the image a name (NAME[:TAG]); without a tag it gets :${ref}`],
      });
    }
    chosen = normalizeOrFail(ref, info.file, context);
  }
  const baseName = imageRepository(parseImageRef(chosen));
  const refs = [chosen];
  let fromManifest = false;
  for (const m of info.manifests) {
    let n: string | undefined;
    if (m.containerdName !== undefined) n = m.containerdName;
    else if (m.refName !== undefined) {
      if (tagOnly(m.refName)) n = `${baseName}:${m.refName}`;
      else if (hasImagePrefix(m.refName, baseName)) n = m.refName;
    }
    if (n === chosen) fromManifest = true;
    if (n !== undefined && !refs.includes(n)) refs.push(n);
  }
  return { name: chosen, baseName, refs, ...(!fromManifest && { indexName: chosen }) };
}

function normalizeOrFail(ref: string, file: string, context: string): string {
  try {
    return formatImageRef(parseImageRef(ref));
  } catch (err) {
    throw new InputError(`${context}: ${file}: the archive's image name is unusable: ${errorMessage(err)}`, {
      suggestions: ['give the image a name (NAME[:TAG])'],
    });
  }
}

/** containerd's isImagePrefix: `s` is `prefix` or continues it with `/`, `:` or `@`. */
function hasImagePrefix(s: string, prefix: string): boolean {
  if (!s.startsWith(prefix)) return false;
  return s.length === prefix.length || '/:@'.includes(s[prefix.length] as string);
}

interface CtrOptions {
  address: string;
  signal?: AbortSignal;
  /** ctr executable (default: `ctr` on PATH). */
  ctrPath?: string;
}

/**
 * Run `ctr -a ADDRESS -n k8s.io ARGS...` without a shell, optionally feeding
 * it a stream (`stdin`: a source and the transforms to pipe it through). A missing ctr is a MissingDependencyError, a failure a
 * KletError with the last line of ctr's stderr (ctr prints its error there
 * as `ctr: ...`); an abort rejects with the AbortError.
 */
async function ctr(args: string[], opts: CtrOptions, what: string, stdin?: [Readable, ...Duplex[]]): Promise<string> {
  const bin = opts.ctrPath ?? 'ctr';
  const argv = ['-a', opts.address, '-n', CRI_NAMESPACE, ...args];
  log.debug(`${bin} ${argv.join(' ')}${stdin === undefined ? '' : ' < (stream)'}`);
  let feed: Promise<void> = Promise.resolve();
  const run = new Promise<string>((resolve, reject) => {
    const child = execFile(
      bin,
      argv,
      { encoding: 'utf8', maxBuffer: 16 << 20, ...(opts.signal !== undefined && { signal: opts.signal }) },
      (err, stdout, stderr) => {
        if (err === null) return resolve(stdout);
        if (isAbortError(err)) return reject(err);
        if (isErrnoException(err) && err.code === 'ENOENT') {
          return reject(
            new MissingDependencyError(`${what}: ctr is not installed (${bin}: not found; ctr comes with containerd)`, {
              suggestions: ['apt-get install containerd'],
            }),
          );
        }
        const lines = stderr
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
        reject(new KletError(`${what}: ${lines.at(-1) ?? errorMessage(err)}`, { cause: err }));
      },
    );
    if (stdin !== undefined && child.stdin !== null) feed = pipeline([...stdin, child.stdin]);
    else child.stdin?.end();
  });
  // ctr's own error explains more than the EPIPE its early exit gives the feed.
  const [out, fed] = await Promise.allSettled([run, feed]);
  if (out.status === 'rejected') throw out.reason;
  if (fed.status === 'rejected') throw new KletError(`${what}: ${errorMessage(fed.reason)}`, { cause: fed.reason });
  return out.value;
}

/** Fail early and clearly when nothing listens at the socket path (ctr would wait, then say "context deadline exceeded"). */
async function checkSocket(address: string, what: string): Promise<void> {
  try {
    const st = await stat(address);
    if (!st.isSocket()) throw new KletError(`${what}: ${address} is not a socket`);
  } catch (err) {
    if (err instanceof KletError) throw err;
    throw new KletError(`${what}: no containerd socket at ${address}`, {
      cause: err,
      suggestions: ['is containerd running? (klet runtime start)'],
    });
  }
}

/** Names of the images containerd holds in the CRI namespace (`ctr images ls -q`). */
export async function listImageRefs(address: string, opts: { signal?: AbortSignal; ctrPath?: string } = {}): Promise<string[]> {
  const what = 'images';
  await checkSocket(address, what);
  const out = await ctr(['images', 'ls', '-q'], { address, ...opts }, `${what}: listing images in containerd`);
  return out.split('\n').map((l) => l.trim()).filter(Boolean);
}

export interface ImportImageOptions {
  /** containerd's socket path. */
  address: string;
  /** The archive (tar or tar.gz of an OCI image layout). */
  file: string;
  /** Image name; see {@link planImport} for what happens without it. */
  name?: string;
  signal?: AbortSignal;
  ctrPath?: string;
}

export interface ImportImageResult {
  /** The image's name. */
  name: string;
  /** Every name that now points at the archive's content (the name first). */
  refs: string[];
}

/**
 * Import an OCI image layout archive into containerd's CRI namespace with
 * `ctr images import --base-name BASE --index-name NAME FILE`, after
 * checking the archive ({@link inspectImageArchive}) and choosing its name
 * ({@link planImport}). ctr also unpacks the image for the default
 * snapshotter, so a container can start from it at once.
 */
export async function importImageArchive(opts: ImportImageOptions): Promise<ImportImageResult> {
  const what = 'images import';
  const info = await inspectImageArchive(opts.file, { context: what });
  const plan = planImport(info, opts.name, what);
  await checkSocket(opts.address, what);
  const ctrOpts: CtrOptions = {
    address: opts.address,
    ...(opts.signal !== undefined && { signal: opts.signal }),
    ...(opts.ctrPath !== undefined && { ctrPath: opts.ctrPath }),
  };
  // ctr 1.6 reads only plain tars ("archive/tar: invalid tar header" for a
  // .tar.gz), so a compressed archive is decompressed into its stdin.
  const compressed = info.compression === 'gzip';
  // No --index-name when a manifest already gets the name: ctr 1.6 would
  // then set the one name twice, to the index and then to the manifest,
  // leaving the index unreferenced once its import lease ends; containerd's
  // garbage collector, when it runs at that moment, deletes the index before
  // ctr unpacks the first of the two, and the import fails with "content
  // digest <the index>: not found" (seen now and then on a freshly started
  // containerd, every retry failing alike). containerd's CRI plugin, which
  // re-points the name on the image events, made which target won a race.
  const indexName = plan.indexName === undefined ? [] : ['--index-name', plan.indexName];
  await ctr(
    ['images', 'import', '--base-name', plan.baseName, ...indexName, compressed ? '-' : info.file],
    ctrOpts,
    `${what}: ${opts.file}`,
    compressed ? [createReadStream(info.file), createGunzip()] : undefined,
  );
  log.debug(`imported ${opts.file} as ${plan.refs.join(', ')}`);
  return { name: plan.name, refs: plan.refs };
}

/**
 * Where the built-in image of `kind` is cached: `KIND-HASH.tar`, the hash
 * being that of everything the image is built from (see imageSpecDigest),
 * so a changed host busybox or a changed klet image recipe means a rebuild.
 * Builds into the cache if absent, and removes older archives of the kind.
 */
async function cachedBuiltinImage(kind: BuiltinImageKind, cacheDir: string): Promise<string> {
  const pauseBinary = kind === 'pause' ? await buildPauseBinary(cacheDir) : null;
  if (kind === 'pause' && pauseBinary === null) log.debug('no C compiler (cc -static): the sandbox image runs a shell loop as its pause process');
  const spec = await builtinImageSpec(kind, undefined, { pauseBinary });
  const key = (await imageSpecDigest(spec)).slice('sha256:'.length, 'sha256:'.length + 16);
  const fileName = `${kind}-${key}.tar`;
  const file = path.join(cacheDir, fileName);
  await mkdir(cacheDir, { recursive: true });
  const exists = await stat(file).then(
    (s) => s.isFile() && s.size > 0,
    () => false,
  );
  if (!exists) {
    log.debug(`building the ${kind} image into ${file}`);
    await buildOciImage({ ...spec, outFile: file });
  }
  for (const other of await readdir(cacheDir)) {
    if (other !== fileName && other.startsWith(`${kind}-`) && other.endsWith('.tar')) {
      await rm(path.join(cacheDir, other), { force: true });
    }
  }
  return file;
}

/**
 * Make sure containerd at `address` has klet's built-in images (the sandbox
 * image CRI's `sandbox_image` names, and busybox), building them under
 * `cacheDir` and importing those it lacks. Returns their names.
 */
export async function ensureBuiltinImages(
  address: string,
  cacheDir: string,
  opts: { signal?: AbortSignal; ctrPath?: string } = {},
): Promise<string[]> {
  const have = new Set(await listImageRefs(address, opts));
  const refs: string[] = [];
  for (const kind of BUILTIN_IMAGE_KINDS) {
    const ref = BUILTIN_IMAGE_REFS[kind];
    if (!have.has(ref)) {
      const file = await cachedBuiltinImage(kind, cacheDir);
      await importImageArchive({ address, file, name: ref, ...opts });
      log.debug(`imported the built-in ${kind} image as ${ref}`);
    }
    refs.push(ref);
  }
  return refs;
}
