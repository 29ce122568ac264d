/**
 * Container log rotation, as the kubelet's container log manager does it
 * (pkg/kubelet/logs/container_log_manager.go), so that a chatty container
 * cannot fill the node's disk under /var/log/pods:
 *
 * - every `containerLogMonitorInterval` (10 s), each running container of
 *   this klet (CRI ListContainers by klet's owner label: never another
 *   kubelet's or klet's) whose log file has reached `containerLogMaxSize`
 *   (10Mi) is rotated, by up to `containerLogMaxWorkers` (1) at a time;
 * - a rotation: what an earlier one left half done is removed (`*.tmp`, and
 *   a `.gz` whose uncompressed file is still there), the oldest rotated
 *   files go until `containerLogMaxFiles − 2` (5 − 2) are left, those are
 *   gzipped (`N.log.<time>.gz`), the live file is renamed
 *   `N.log.<YYYYMMDD-hhmmss>` (local time) and the runtime reopens `N.log`
 *   (CRI ReopenContainerLog); if it cannot, the file is renamed back;
 * - a live file that is gone is reopened first.
 *
 * So a container keeps at most `containerLogMaxFiles` files: the live one,
 * the one just rotated (uncompressed, as a reader may still hold it open)
 * and the gzipped ones. `kubectl logs` and `klet logs` read only the live
 * file (the kubelet's too); `logs -f` follows into the new file
 * (reader.ts). A negative max size turns rotation off (the kubelet's stub).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { CriClient } from '../cri/client.js';
import { type Container, ContainerState } from '../cri/gen/api.js';
import { CONTAINER_NAME_LABEL, CONTAINER_RESTART_COUNT_ANNOTATION, POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL } from '../kuberuntime/labels.js';
import { containerLogDir, containerLogPath, podLogDir } from './paths.js';
import { errorMessage } from '../errors.js';
import { log } from '../log.js';
import { pause } from '../util/sleep.js';

const COMPRESS_SUFFIX = '.gz';
const TMP_SUFFIX = '.tmp';

export interface LogRotatePolicy {
  /** Bytes; a live file this large or larger is rotated. Negative: no rotation. */
  maxSize: number;
  /** At least 2: the live file and the last rotated one. */
  maxFiles: number;
}

/** The kubelet's isInUse: a `.tmp` never is; an uncompressed file is not once its `.gz` exists (its compression finished). */
function inUse(name: string, all: ReadonlySet<string>): boolean {
  if (name.endsWith(TMP_SUFFIX)) return false;
  if (name.endsWith(COMPRESS_SUFFIX)) return true;
  return !all.has(name + COMPRESS_SUFFIX);
}

/** The rotated files of a log (`<log>.*`), split as the kubelet's filterUnusedLogs splits them. */
export function splitRotated(rotated: readonly string[]): { inUse: string[]; unused: string[] } {
  const all = new Set(rotated);
  const out = { inUse: [] as string[], unused: [] as string[] };
  for (const r of rotated) (inUse(r, all) ? out.inUse : out.unused).push(r);
  return out;
}

/**
 * What one rotation does to the files beside the live log, before renaming it: remove the unused
 * ones and the oldest in-use ones beyond `maxFiles − 2` (by name: the timestamps sort), then
 * compress what is left uncompressed. Pure (table tests).
 */
export function rotationPlan(rotated: readonly string[], maxFiles: number): { remove: string[]; compress: string[] } {
  const { inUse: kept, unused } = splitRotated(rotated);
  kept.sort();
  const keep = Math.max(0, maxFiles - 2);
  const excess = Math.max(0, kept.length - keep);
  const remaining = kept.slice(excess);
  return { remove: [...unused, ...kept.slice(0, excess)], compress: remaining.filter((r) => !r.endsWith(COMPRESS_SUFFIX)) };
}

/** `<log>.<YYYYMMDD-hhmmss>` in local time (Go's "20060102-150405" layout of clock.Now()). */
export function rotatedName(logPath: string, now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}`;
  return `${logPath}.${stamp}`;
}

export interface ContainerLogManagerOptions {
  cri: CriClient;
  /** The labels of this klet's containers (instanceSelector): nothing else is rotated. */
  owner: Record<string, string>;
  /** The pod log root (podLogsDir): where a container's log path is expected without asking the runtime. */
  logRoot: string;
  policy: LogRotatePolicy;
  /** ms (the kubelet's containerLogMonitorInterval, 10 s). */
  monitorInterval: number;
  /** Containers rotated at once (containerLogMaxWorkers, 1). */
  maxWorkers: number;
  now?: () => Date;
}

export class ContainerLogManager {
  private readonly now: () => Date;

  constructor(private readonly opts: ContainerLogManagerOptions) {
    this.now = opts.now ?? (() => new Date());
  }

  /** Check every container now, then every monitor interval, until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.opts.policy.maxSize < 0) return;
    log.debug(`Initializing container log rotate workers workers=${this.opts.maxWorkers} monitorPeriod=${this.opts.monitorInterval}ms`);
    while (!signal.aborted) {
      try {
        await this.rotateLogs(signal);
      } catch (err) {
        if (!signal.aborted) log.error(`Failed to rotate container logs: ${errorMessage(err)}`);
      }
      await pause(this.opts.monitorInterval, signal);
    }
  }

  /** One pass: every running container of this klet, `maxWorkers` at a time. */
  async rotateLogs(signal: AbortSignal): Promise<void> {
    const { containers } = await this.opts.cri.listContainers({ filter: { labelSelector: this.opts.owner } }, { signal });
    const queue = containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
    const worker = async (): Promise<void> => {
      for (let c = queue.shift(); c !== undefined && !signal.aborted; c = queue.shift()) await this.processContainer(c, signal);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.opts.maxWorkers) }, worker));
  }

  private async processContainer(c: Container, signal: AbortSignal): Promise<void> {
    const { id } = c;
    const call = { signal };
    // Where klet had the runtime write the log, from the container's labels: a file there under the
    // limit needs nothing, and no ContainerStatus call (the kubelet asks the runtime for every
    // running container every 10 s). Anything else (no such file, too big) asks the runtime.
    const expected = expectedLogPath(c, this.opts.logRoot);
    if (expected !== undefined) {
      const size = await fileSize(expected).catch(() => undefined);
      if (size !== undefined && size < this.opts.policy.maxSize) return;
    }
    let logPath: string;
    try {
      const { status } = await this.opts.cri.containerStatus({ containerId: id }, call);
      if (!status?.logPath) return;
      logPath = status.logPath;
    } catch (err) {
      if (!signal.aborted) log.error(`Failed to get container status containerID=${id}: ${errorMessage(err)}`);
      return;
    }
    try {
      let size = await fileSize(logPath);
      if (size === undefined) {
        // The live file is gone (removed by hand, or a rotation cut short): the runtime makes it again.
        await this.opts.cri.reopenContainerLog({ containerId: id }, call);
        size = await fileSize(logPath);
        if (size === undefined) throw new Error(`container log ${logPath} still missing after reopening it`);
      }
      if (size < this.opts.policy.maxSize) return;
      await this.rotateLog(id, logPath, signal);
    } catch (err) {
      if (!signal.aborted) log.error(`Failed to rotate log for container containerID=${id} path=${logPath}: ${errorMessage(err)}`);
    }
  }

  private async rotateLog(id: string, logPath: string, signal: AbortSignal): Promise<void> {
    const dir = path.dirname(logPath);
    const prefix = `${path.basename(logPath)}.`;
    const rotated = (await fsp.readdir(dir)).filter((n) => n.startsWith(prefix)).map((n) => path.join(dir, n));
    const plan = rotationPlan(rotated, this.opts.policy.maxFiles);
    for (const f of plan.remove) await fsp.rm(f, { force: true });
    for (const f of plan.compress) await compress(f);
    const target = rotatedName(logPath, this.now());
    await fsp.rename(logPath, target);
    try {
      await this.opts.cri.reopenContainerLog({ containerId: id }, { signal });
    } catch (err) {
      // As the kubelet: the runtime still writes to the renamed file, so it becomes the live one again.
      await fsp.rename(target, logPath).catch((e) => log.error(`Failed to rename rotated log ${target} back to ${logPath}: ${errorMessage(e)}`));
      throw new Error(`failed to reopen container log ${id}: ${errorMessage(err)}`, { cause: err });
    }
    log.debug(`Rotated container log containerID=${id} path=${logPath} to ${target}`);
  }
}

/** `<root>/<ns>_<pod>_<uid>/<container>/<restartCount>.log` from the labels and annotations klet gave the container. */
function expectedLogPath(c: Container, root: string): string | undefined {
  const ns = c.labels[POD_NAMESPACE_LABEL];
  const pod = c.labels[POD_NAME_LABEL];
  const uid = c.labels[POD_UID_LABEL];
  const name = c.labels[CONTAINER_NAME_LABEL];
  const restarts = c.annotations[CONTAINER_RESTART_COUNT_ANNOTATION];
  if (ns === undefined || pod === undefined || uid === undefined || name === undefined || restarts === undefined || !/^\d+$/.test(restarts)) return undefined;
  return path.join(containerLogDir(podLogDir(ns, pod, uid, root), name), containerLogPath('', Number(restarts)));
}

async function fileSize(file: string): Promise<number | undefined> {
  try {
    return (await fsp.stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** gzip `file` to `file.gz` through `file.tmp` (renamed when complete), with its mode; then remove `file`. */
async function compress(file: string): Promise<void> {
  const { mode } = await fsp.stat(file);
  const tmp = `${file}${TMP_SUFFIX}`;
  try {
    await pipeline(createReadStream(file), createGzip(), createWriteStream(tmp, { mode: mode & 0o7777 }));
    await fsp.rename(tmp, file + COMPRESS_SUFFIX);
  } finally {
    await fsp.rm(tmp, { force: true });
  }
  await fsp.rm(file);
}
