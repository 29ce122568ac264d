/**
 * The manifest directory source (--manifest-dir; the kubelet's
 * pkg/kubelet/config file.go and file_linux.go): the directory is read on
 * start, on filesystem events (debounced), and every fileCheckFrequencyMs,
 * so that an event inotify misses (a network filesystem, a full inotify
 * queue, a directory replaced behind a bind mount) costs at most one
 * period. Which files count is readManifestDir's rule; the path may also be
 * a single manifest file, as the kubelet allows.
 *
 * What survives what, and why:
 *
 * - A file with errors keeps the last good version of its pods (see
 *   keepLastGood) and its errors are reported; other files are unaffected.
 * - A file that is removed removes its pods: deleting the manifest is how
 *   a static pod is stopped.
 * - A directory that is missing or unreadable is a failed read: it is
 *   reported (`/etc/kubernetes/manifests: manifest directory does not
 *   exist`) and every pod keeps running until it is back. A deleted
 *   manifest directory is far more often an accident, a remount or a
 *   configuration-management run recreating it than an intent to stop the
 *   node's control plane, and the kubelet's answer (an empty snapshot)
 *   would kill etcd and the API server. To stop all static pods, empty the
 *   directory instead.
 * - Consequently a directory that does not exist when klet starts never
 *   makes the source ready (PodConfig.sourcesReady()) until it appears, so
 *   pods that ran before klet restarted are not removed on its account.
 *   Commands that want a missing directory to be an error should check
 *   before starting the source.
 */
import { type FSWatcher, promises as fs, watch } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { ManifestError, type ParsedManifests, prepareManifests, readManifestDir, readManifestFile } from '../pod/manifest.js';
import { type ManifestUnit, type PodSource, type SourceRead, type SourceSink, Wakeup, keepLastGood, mergeUnits, report } from './source.js';

/** The kubelet's default --file-check-frequency. */
export const DEFAULT_FILE_CHECK_FREQUENCY_MS = 20_000;
/** Events closer together than this cause one read: an editor's save or a `cp` of several files is one change. */
export const DEFAULT_WATCH_DEBOUNCE_MS = 100;

export interface FileSourceOptions {
  /** The manifest directory, or a single manifest file. */
  path: string;
  /** This node's name (static pods are named after it). */
  nodeName: string;
  /** Re-read at least this often, events or not. Default 20 s. */
  fileCheckFrequencyMs?: number;
  /** Delay between an fs event and the read it causes. Default 100 ms. */
  debounceMs?: number;
  /** Use fs.watch (default true). Without it only the periodic re-read sees changes. */
  watch?: boolean;
  /** Source name. Default `file`. */
  name?: string;
}

function reason(err: unknown): string {
  switch ((err as { code?: unknown }).code) {
    case 'ENOENT':
      return 'manifest directory does not exist';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'not a directory';
    default:
      return errorMessage(err);
  }
}

export class FileSource implements PodSource {
  readonly name: string;
  private readonly path: string;
  private readonly nodeName: string;
  private readonly periodMs: number;
  private readonly debounceMs: number;
  private readonly useWatch: boolean;
  /** What each file (absolute path) contributed at the last read. */
  private units = new Map<string, ManifestUnit>();
  /** What the path looked like at the last successful read, and that read's result. */
  private last: { fingerprint: string; result: SourceRead } | null = null;

  constructor(opts: FileSourceOptions) {
    this.name = opts.name ?? 'file';
    this.path = path.resolve(opts.path);
    this.nodeName = opts.nodeName;
    this.periodMs = opts.fileCheckFrequencyMs ?? DEFAULT_FILE_CHECK_FREQUENCY_MS;
    this.debounceMs = opts.debounceMs ?? DEFAULT_WATCH_DEBOUNCE_MS;
    this.useWatch = opts.watch ?? true;
  }

  async run(sink: SourceSink, signal: AbortSignal): Promise<void> {
    const wakeup = new Wakeup();
    // Trailing debounce, capped: read once events have been quiet for
    // debounceMs (a directory being filled file by file is read once it is
    // full, not half-way), but never later than 10 debounce periods after
    // the first event of a burst.
    let debounce: NodeJS.Timeout | undefined;
    let burstStart: number | undefined;
    const onEvent = (): void => {
      const now = Date.now();
      burstStart ??= now;
      clearTimeout(debounce);
      const delay = Math.max(0, Math.min(this.debounceMs, burstStart + 10 * this.debounceMs - now));
      debounce = setTimeout(() => {
        debounce = undefined;
        burstStart = undefined;
        wakeup.fire();
      }, delay);
    };
    const watcher = new PathWatcher(this.path, onEvent);
    try {
      while (!signal.aborted) {
        // Watch first, read second: a change between the two is then seen
        // twice rather than not at all.
        if (this.useWatch) await watcher.ensure();
        const result = await this.read();
        if (signal.aborted) break;
        report(sink, result);
        await wakeup.wait(this.periodMs, signal);
      }
    } finally {
      clearTimeout(debounce);
      watcher.close();
    }
  }

  /**
   * One read of the path: a snapshot, or the errors of a read that failed
   * (the path is missing or not readable as a whole). Reads depend on the
   * previous one (last good versions), so one caller at a time: run(), or
   * a caller that does not run it.
   */
  async read(): Promise<SourceRead> {
    let isDir: boolean;
    try {
      isDir = (await fs.stat(this.path)).isDirectory();
    } catch (err) {
      return { failed: [new ManifestError({ file: this.path, message: reason(err) })] };
    }
    // The periodic re-read (and every fs event) costs a readdir and a stat per
    // file while nothing changed; files are parsed again only when some name,
    // inode, size, mtime or ctime differs.
    const fingerprint = await this.fingerprint(isDir);
    if (fingerprint !== null && this.last?.fingerprint === fingerprint) return this.last.result;
    const result = await this.parse(isDir);
    this.last = fingerprint !== null && 'snapshot' in result ? { fingerprint, result } : null;
    return result;
  }

  private async fingerprint(isDir: boolean): Promise<string | null> {
    try {
      const names = isDir ? (await fs.readdir(this.path)).filter((n) => !n.startsWith('.')).sort() : [''];
      const parts = await Promise.all(
        names.map(async (n) => {
          const st = await fs.stat(n === '' ? this.path : path.join(this.path, n), { bigint: true });
          return `${n}\0${st.ino}\0${st.size}\0${st.mtimeNs}\0${st.ctimeNs}`;
        }),
      );
      return parts.join('\n');
    } catch {
      return null; // something changed under us: read for real
    }
  }

  private async parse(isDir: boolean): Promise<SourceRead> {
    const parsed = isDir ? await readManifestDir(this.path) : await readManifestFile(this.path);
    // An error about the directory itself, not one of its files: listing it failed.
    const whole = isDir ? parsed.errors.filter((e) => path.resolve(e.file) === this.path) : [];
    if (whole.length > 0) return { failed: whole };

    const now = new Date();
    const units = new Map<string, ManifestUnit>();
    const errors: ManifestError[] = [];
    for (const [file, part] of byFile(parsed)) {
      // Listed, then deleted before it could be read: the file is gone, not
      // broken (no error, and no last good version of its pods to keep).
      if (isDir && part.objects.length === 0 && part.errors.length > 0 && (await vanished(file))) continue;
      const set = prepareManifests(part, { nodeName: this.nodeName, now });
      errors.push(...set.errors);
      units.set(file, keepLastGood(part.files[0] ?? file, set, this.units.get(file)));
    }
    // Files that are gone are dropped here, and with them their pods.
    this.units = units;
    const merged = mergeUnits(units.values());
    return { snapshot: { pods: merged.pods, objects: merged.objects, errors: [...errors, ...merged.errors] } };
  }
}

/** The directory entry itself no longer exists (a dangling symlink still does). */
async function vanished(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return false;
  } catch (err) {
    return (err as { code?: unknown }).code === 'ENOENT';
  }
}

/**
 * Split one read into one ParsedManifests per file (absolute path), in
 * name order, so that each file is prepared, judged and kept on its own.
 * Files that yielded nothing are kept too: they are present, and a file
 * emptied on purpose removes its pods.
 */
function byFile(parsed: ParsedManifests): Map<string, ParsedManifests> {
  const out = new Map<string, ParsedManifests>();
  const part = (display: string): ParsedManifests => {
    const file = path.resolve(display);
    let p = out.get(file);
    if (p === undefined) {
      p = { objects: [], errors: [], files: [display] };
      out.set(file, p);
    }
    return p;
  };
  for (const display of parsed.files) part(display);
  for (const e of parsed.errors) part(e.file).errors.push(e);
  for (const o of parsed.objects) part(o.display).objects.push(o);
  return out;
}

/**
 * fs.watch on the manifest directory, or on its parent while the
 * directory is missing (or when the path is a file), re-aimed when the
 * directory is deleted and re-created: an inotify watch follows the inode,
 * so a watch on a deleted directory never fires again.
 */
class PathWatcher {
  private current: { watcher: FSWatcher; target: string; ino: number; dev: number } | undefined;

  constructor(
    private readonly path: string,
    private readonly onEvent: () => void,
  ) {}

  async ensure(): Promise<void> {
    const st = await fs.stat(this.path).catch(() => undefined);
    const isDir = st?.isDirectory() === true;
    const target = isDir ? this.path : path.dirname(this.path);
    const tst = isDir ? st : await fs.stat(target).catch(() => undefined);
    if (tst === undefined) {
      // Nothing to watch: the periodic read notices when it comes back.
      this.close();
      return;
    }
    const cur = this.current;
    if (cur !== undefined && cur.target === target && cur.ino === tst.ino && cur.dev === tst.dev) return;
    this.close();
    const only = isDir ? undefined : path.basename(this.path);
    try {
      const watcher = watch(target, { persistent: false }, (_event, name) => {
        if (only === undefined || name === null || name === only) this.onEvent();
      });
      watcher.on('error', (err) => {
        log.debug(`watching ${target}: ${errorMessage(err)}`);
        if (this.current?.watcher === watcher) this.close();
        this.onEvent();
      });
      this.current = { watcher, target, ino: tst.ino, dev: tst.dev };
    } catch (err) {
      // Out of inotify watches, or the directory vanished again: the
      // periodic read still converges.
      log.debug(`watching ${target}: ${errorMessage(err)}`);
    }
  }

  close(): void {
    this.current?.watcher.close();
    this.current = undefined;
  }
}
