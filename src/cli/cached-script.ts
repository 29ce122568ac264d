/**
 * Load a CommonJS bundle with a V8 code cache made at the end of a run.
 *
 * Node's own compile cache (module.enableCompileCache, bin/run.js) stores
 * what V8 compiled right after parsing a module: its top level, not the
 * functions compiled lazily when first called. In a 30-pod `klet runonce`
 * those are most of the work before the first sandbox request (the YAML
 * parser, decoding and validating the manifests, the CRI client, building
 * each pod's requests): compiling them again on every start cost ~40 ms
 * before the first RunPodSandbox and ~70 ms of CPU in all (bench/results/HISTORY.md,
 * fifteenth session). A vm.Script can produce its code cache after it ran
 * (script.createCachedData()), with every function compiled by then; the
 * next start takes them from there.
 *
 * The cache is written once, at exit, by the first run that found none (or
 * found it refused by V8: another Node, other V8 flags) and read by the
 * runs after it. It is kept next to the bundle, as
 * `.<name>.<crc32>-<size>-<node version>-<arch>.cache`: a rebuilt bundle or
 * another Node has another name (and `npm run build` starts dist/bundle/
 * afresh). Code read from a file runs as the reader, so the cache is used
 * only where no one else could have written it: the directory and the file
 * belong to the user running klet and are writable by no one else.
 * Otherwise (and where the directory cannot be written: a read-only
 * install), with NODE_DISABLE_COMPILE_CACHE=1 (which also turns off
 * Node's own), and when source maps are on (--log-level debug prints stacks
 * that name klet's sources; Node maps only files it loaded itself), the
 * bundle is loaded with require() as any CommonJS file.
 * The cache only saves compiling: V8 checks it against the source and its
 * own version and flags, and falls back to compiling when it does not fit.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import zlib from 'node:zlib';

/** Arguments of the CommonJS wrapper, as Node passes them. */
const HEAD = '(function (exports, require, module, __filename, __dirname) { ';
const TAIL = '\n})';

export interface LoadedBundle {
  exports: Record<string, unknown>;
  /** How the bundle was loaded: from a code cache, compiled (a cache is written at exit), or with require(). */
  how: 'cache' | 'compiled' | 'require';
}

type Crc32 = (data: Buffer) => number;
/** zlib.crc32 (Node 22.2 and later; without it, no cache). */
const crc32Of = (zlib as { crc32?: Crc32 }).crc32;

/**
 * zlib.crc32 when a cache may be used for a bundle in `dir`, else null:
 * checked before the bundle is read, so the require() fallback reads it once.
 */
function cacheAllowed(dir: string, env: NodeJS.ProcessEnv): Crc32 | null {
  if (env.NODE_DISABLE_COMPILE_CACHE !== undefined && env.NODE_DISABLE_COMPILE_CACHE !== '') return null;
  if (process.sourceMapsEnabled) return null;
  if (crc32Of === undefined || typeof process.getuid !== 'function') return null;
  if (!ownedByUs(fs.statSync(dir, { throwIfNoEntry: false }))) return null;
  try {
    // A read-only install (a read-only mount): no cache can be written, Node's compile cache (require) does better than none.
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    return null;
  }
  return crc32Of;
}

/** The cache file of the bundle `file` with these contents, for this Node. */
function cacheFileName(file: string, source: Buffer, crc32: Crc32): string {
  const tag = `${crc32(source).toString(16).padStart(8, '0')}-${source.length}-${process.version}-${process.arch}`;
  return path.join(path.dirname(file), `.${path.basename(file)}.${tag}.cache`);
}

/** Owned by the user running this process, and writable by no one else. */
function ownedByUs(st: fs.Stats | undefined): boolean {
  return st !== undefined && st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
}

/**
 * A cache file: this magic, the CRC-32 of the code cache (little-endian),
 * then the code cache. V8 checks a code cache's version, flags and source,
 * but its checksum only in debug builds: damaged bytes are caught here, as
 * Node's own compile cache does.
 */
const MAGIC = Buffer.from('klet-v8-cache-1\n');

/** The code cache of a cache file that only we could have written and that is whole, else undefined. */
function readCache(cacheFile: string, crc32: Crc32): Buffer | undefined {
  let fd: number;
  try {
    fd = fs.openSync(cacheFile, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || !ownedByUs(st)) return undefined;
    const bytes = fs.readFileSync(fd);
    const head = MAGIC.length + 4;
    if (bytes.length <= head || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
    const data = bytes.subarray(head);
    return bytes.readUInt32LE(MAGIC.length) === crc32(data) ? data : undefined;
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Write the script's code cache (atomically: a temp file renamed over it)
 * and remove the caches of earlier builds or Node versions. Best effort: a
 * cache that cannot be written is compiled again next time.
 */
function writeCache(script: vm.Script, cacheFile: string, file: string, crc32: Crc32): void {
  const dir = path.dirname(cacheFile);
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    const data = script.createCachedData();
    const crc = Buffer.alloc(4);
    crc.writeUInt32LE(crc32(data));
    fs.writeFileSync(tmp, Buffer.concat([MAGIC, crc, data]), { mode: 0o600, flag: 'wx' });
    fs.renameSync(tmp, cacheFile);
    const prefix = `.${path.basename(file)}.`;
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith(prefix) && name.endsWith('.cache') && path.join(dir, name) !== cacheFile) fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    fs.rmSync(tmp, { force: true });
  }
}

/** Load the CommonJS bundle `file` (an absolute path), through its code cache when one may be used. */
export function loadBundle(file: string, env: NodeJS.ProcessEnv = process.env): LoadedBundle {
  const require = createRequire(file);
  const crc32 = cacheAllowed(path.dirname(file), env);
  if (crc32 === null) return { exports: require(file) as Record<string, unknown>, how: 'require' };
  const source = fs.readFileSync(file);
  const cacheFile = cacheFileName(file, source, crc32);
  const cachedData = readCache(cacheFile, crc32);
  // No import() in the bundle (scripts/bundle.js checks): packages left out of it are required, from the bundle's own file.
  const script = new vm.Script(HEAD + source.toString('utf8') + TAIL, { filename: file, cachedData });
  const fromCache = cachedData !== undefined && !script.cachedDataRejected;
  if (!fromCache) process.once('exit', () => writeCache(script, cacheFile, file, crc32));
  const module = { exports: {} as Record<string, unknown> };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, require, module, file, path.dirname(file));
  return { exports: module.exports, how: fromCache ? 'cache' : 'compiled' };
}
