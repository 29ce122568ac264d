/**
 * Where the kubelet tells the runtime to write container logs:
 *
 *     /var/log/pods/<namespace>_<pod name>_<pod uid>/<container>/<restartCount>.log
 *
 * (pkg/kubelet/kuberuntime/helpers.go BuildPodLogsDirectory and
 * BuildContainerLogsDirectory). Each restart of a container writes a new
 * `N.log`; the kubelet's log rotation renames a full file to
 * `N.log.<timestamp>` (possibly gzipped) and the runtime reopens `N.log`.
 * Rotated files are not read here: `kubectl logs` does not read them either.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';

export const DEFAULT_POD_LOGS_ROOT = '/var/log/pods';

/** The pod's log directory; `root` is for tests and non-default layouts. */
export function podLogDir(namespace: string, name: string, uid: string, root: string = DEFAULT_POD_LOGS_ROOT): string {
  return path.join(root, `${namespace}_${name}_${uid}`);
}

/** The log directory of a pod object (namespace `default` when unset). */
export function podLogDirOf(pod: { metadata?: { namespace?: string; name?: string; uid?: string } }, root?: string): string {
  const md = pod.metadata ?? {};
  return podLogDir(md.namespace ?? 'default', md.name ?? '', md.uid ?? '', root);
}

/** The directory holding one container's `N.log` files. */
export function containerLogDir(podLogDirectory: string, containerName: string): string {
  return path.join(podLogDirectory, containerName);
}

/** The log file of one container instance, by its restart count. */
export function containerLogFile(containerDirectory: string, restartCount: number): string {
  return path.join(containerDirectory, containerLogPath('', restartCount));
}

/** A container instance's log file relative to the pod log dir (CRI ContainerConfig.log_path): `<name>/<restartCount>.log`. */
export function containerLogPath(containerName: string, restartCount: number): string {
  return path.join(containerName, `${restartCount}.log`);
}

const LOG_FILE = /^(\d+)\.log$/;

/**
 * The log file of the latest container instance in `dir`: the `N.log` with
 * the highest restart count, or with `previous` the one before it (what
 * `kubectl logs --previous` shows: the instance that last exited). Null when
 * there is no such file or no such directory. Counting by file name rather
 * than by the container status keeps this usable for containers the runtime
 * has already garbage-collected.
 */
export async function latestLogFile(dir: string, opts: { previous?: boolean } = {}): Promise<string | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
  const counts = names
    .map((n) => LOG_FILE.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  const pick = counts[opts.previous === true ? 1 : 0];
  return pick === undefined ? null : containerLogFile(dir, pick);
}
