/**
 * `klet logs`: a container's log, read from the CRI log files under
 * /var/log/pods, as `kubectl logs` shows it.
 */
import { readDebugContainers } from '../kuberuntime/poddir.js';
import fsp from 'node:fs/promises';
import { InputError, NotFoundError } from '../errors.js';
import { listContainersRunning } from '../kuberuntime/runtime-status.js';
import { containerLogDir, latestLogFile, podLogDir } from '../logs/paths.js';
import { readContainerLog } from '../logs/reader.js';
import type { ServiceDeps } from './deps.js';
import { findPods } from './lookup.js';

export interface ReadLogsOptions {
  /** The pod as the user named it: ns/name, name, or a UID prefix. */
  pod: string;
  /** Required when the pod has several containers. */
  container?: string;
  follow?: boolean;
  previous?: boolean;
  /** Lines from the end; -1 for all. */
  tail?: number;
  timestamps?: boolean;
}

/**
 * Resolve the pod and container (errors name them), then return the log as
 * chunks of text; following ends when the container exits or the signal aborts.
 */
export async function readLogs(opts: ReadLogsOptions, deps: ServiceDeps): Promise<AsyncIterable<string>> {
  const [target] = await findPods(deps, [opts.pod]);
  const pod = target!;
  // Ephemeral containers too, as kubectl logs reads them: the spec's (an API pod's) and klet debug's (kept in the pod dir).
  const debug = (await readDebugContainers(deps.rootDir, pod.uid)).filter((d) => !(pod.spec?.spec?.ephemeralContainers ?? []).some((c) => c.name === d.name));
  const specNames = [...(pod.spec?.spec?.initContainers ?? []), ...(pod.spec?.spec?.containers ?? []), ...(pod.spec?.spec?.ephemeralContainers ?? []), ...debug].map((c) => c.name);
  const dir = podLogDir(pod.namespace, pod.name, pod.uid, deps.logRoot);
  const names = specNames.length > 0 ? specNames : await fsp.readdir(dir).catch(() => [] as string[]);
  let container = opts.container;
  if (container === undefined) {
    const apps = pod.spec?.spec?.containers?.map((c) => c.name) ?? names;
    if (apps.length !== 1) {
      throw new InputError(`a container name must be specified for pod ${pod.namespace}/${pod.name}, choose one of: [${names.join(' ')}]`);
    }
    container = apps[0]!;
  } else if (!names.includes(container)) {
    throw new NotFoundError(`container ${container} is not valid for pod ${pod.namespace}/${pod.name}, choose one of: [${names.join(' ')}]`);
  }
  const file = await latestLogFile(containerLogDir(dir, container), { previous: opts.previous });
  if (file === null) {
    throw new NotFoundError(
      opts.previous
        ? `previous terminated container "${container}" in pod "${pod.name}" not found`
        : `container "${container}" in pod "${pod.name}" has no logs yet`,
    );
  }
  const name = container;
  return readContainerLog(file, {
    follow: opts.follow,
    tail: opts.tail,
    timestamps: opts.timestamps,
    signal: deps.signal,
    isRunning: () => listContainersRunning(deps.cri, pod.uid, name),
  });
}

/**
 * Everything a finished pod's containers wrote, init containers first, in
 * spec order (what `klet run-pod --rm` prints before it removes the pod).
 */
export async function podOutput(
  pod: { namespace: string; name: string; uid: string; containers: string[] },
  deps: Pick<ServiceDeps, 'signal' | 'logRoot'>,
): Promise<string> {
  const dir = podLogDir(pod.namespace, pod.name, pod.uid, deps.logRoot);
  let out = '';
  for (const c of pod.containers) {
    const file = await latestLogFile(containerLogDir(dir, c));
    if (file === null) continue;
    for await (const chunk of readContainerLog(file, { signal: deps.signal })) out += chunk;
  }
  return out;
}
