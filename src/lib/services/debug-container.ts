/**
 * `klet debug POD --image IMG`: what `kubectl debug` does with an ephemeral
 * container, for the pods of this node's files and URLs (static and
 * standalone pods, which the API server gives no ephemeral containers):
 * a container of the image in the pod's running sandbox, in the target
 * container's process namespace with `target`, never restarted.
 *
 * It is started here, beside a running `klet sync` or without one: only that
 * container is created (no other container of the pod is touched), and only
 * once it runs is it recorded (the pod dir's ephemeral-containers.json and
 * the pod's record), so a sync that looks at the pod meanwhile neither starts
 * it a second time nor misses it afterwards: every sync merges the recorded
 * ones into the pod and reports them in ephemeralContainerStatuses.
 */
import type { V1EphemeralContainer } from '@kubernetes/client-node';
import { randomInt } from 'node:crypto';
import { ContainerState } from '../cri/gen/api.js';
import { InputError, KletError, NotFoundError } from '../errors.js';
import { API_SOURCE } from '../config/api.js';
import { isValidImageReference } from '../image/reference.js';
import { addDebugContainer, readPodRecord, withDebugContainers, writePodRecord } from '../kuberuntime/poddir.js';
import { startDebugContainers } from '../kuberuntime/sync-pod.js';
import { readContainerLog } from '../logs/reader.js';
import { applyPodDefaults } from '../pod/defaults.js';
import type { RemoteCommandIo } from '../streaming/remote.js';
import { attachToPod } from './debug-pod.js';
import { syncContext, sleep, type ServiceDeps } from './deps.js';
import { findPods } from './lookup.js';

export interface DebugOptions {
  /** ns/name, name or a UID prefix. */
  pod: string;
  image: string;
  /** The container whose process namespace it joins (--target). */
  target?: string;
  /** Its name (-c); default debugger-<5 random characters>. */
  name?: string;
  /** -i: stdin open, and attach to it. */
  stdin: boolean;
  /** -t: a TTY. */
  tty: boolean;
  /** After `--`: its command (the image's entrypoint when empty). */
  command: string[];
}

export interface DebugHooks {
  /** kubectl debug's lines for its standard output ("Defaulting debug container name to …"). */
  out(line: string): void;
  /** Its lines for standard error (attach's prompt hint). */
  notice(line: string): void;
}

/** The characters of utilrand.String (no vowels, no easily confused ones). */
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

function randomSuffix(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHANUMS[randomInt(ALPHANUMS.length)];
  return s;
}

/**
 * Add the debug container and, with `stdin`, attach to it; resolves to its
 * exit code when it ended while attached (0 when it is left running or not
 * attached to).
 */
export async function debugPod(opts: DebugOptions, io: RemoteCommandIo, deps: ServiceDeps, hooks: DebugHooks): Promise<number> {
  if (opts.tty && !opts.stdin) throw new InputError('-i/--stdin is required for containers with -t/--tty=true', { input: 'tty' });
  if (!isValidImageReference(opts.image)) throw new InputError(`invalid image name "${opts.image}": invalid reference format`, { input: 'image' });
  const [known] = await findPods(deps, [opts.pod]);
  const p = known!;
  const rec = await readPodRecord(deps.rootDir, p.uid);
  if (rec === null) throw new NotFoundError(`pod ${p.namespace}/${p.name}: klet has no record of its spec (it only knows it from the runtime)`);
  if (rec.source === API_SOURCE) throw new InputError(`pod ${p.namespace}/${p.name} comes from the API server: add a debug container with kubectl debug`, { input: 'pod' });
  const pod = rec.pod;
  const spec = pod.spec!;
  const names = new Set([...(spec.containers ?? []), ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])].map((c) => c.name));
  let name = opts.name;
  if (name === undefined) {
    do name = `debugger-${randomSuffix(5)}`;
    while (names.has(name));
    hooks.out(`Defaulting debug container name to ${name}.`);
  } else if (names.has(name)) {
    throw new InputError(`container "${name}" already exists in pod ${p.namespace}/${p.name}: name another with -c`, { input: 'container' });
  }
  if (opts.target !== undefined) {
    if (!(spec.containers ?? []).some((c) => c.name === opts.target)) {
      throw new NotFoundError(`target container "${opts.target}" is not a container of pod ${p.namespace}/${p.name}, choose one of: [${(spec.containers ?? []).map((c) => c.name).join(' ')}]`, { input: 'target' });
    }
    hooks.out(`Targeting container "${opts.target}". If you don't see processes from this container it may be because the container runtime doesn't support this feature.`);
  }
  const ec: V1EphemeralContainer = {
    name,
    image: opts.image,
    ...(opts.command.length > 0 ? { command: opts.command } : {}),
    stdin: opts.stdin,
    tty: opts.tty,
    ...(opts.target !== undefined ? { targetContainerName: opts.target } : {}),
  };
  const container = applyPodDefaults({ spec: { containers: [], ephemeralContainers: [ec] } }).spec!.ephemeralContainers![0]!;
  const debugged = withDebugContainers(pod, [container]);

  const ctx = syncContext(deps);
  const { started, failures } = await startDebugContainers(ctx, debugged);
  const failed = failures.find((f) => f.container === name);
  if (failed !== undefined) throw new KletError(`debug container ${name} of pod ${p.namespace}/${p.name}: ${failed.reason}: ${failed.message}`);
  const containerId = started[0];
  if (containerId === undefined) throw new KletError(`debug container ${name} of pod ${p.namespace}/${p.name} was not started`);
  await addDebugContainer(deps.rootDir, p.uid, container);
  const latest = (await readPodRecord(deps.rootDir, p.uid)) ?? rec;
  await writePodRecord(deps.rootDir, { ...latest, pod: withDebugContainers(latest.pod, [container]) });
  if (!opts.stdin) return 0;

  // As kubectl debug: one that already ended shows its log; else attach.
  const status = async () => (await deps.cri.containerStatus({ containerId }, { signal: deps.signal })).status;
  let st = await status();
  if (st?.state === ContainerState.CONTAINER_EXITED) {
    for await (const chunk of readContainerLog(st.logPath, { signal: deps.signal })) io.stdout?.write(chunk);
    return st.exitCode;
  }
  hooks.notice('All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.');
  hooks.notice("If you don't see a command prompt, try pressing enter.");
  await attachToPod({ pod: { ...p, spec: debugged }, container: name, containerId }, { stdin: true }, io, deps);
  // The attach ends with the process or when this side let go: the exit code, once the runtime has it.
  for (let i = 0; i < 20; i++) {
    st = await status();
    if (st?.state === ContainerState.CONTAINER_EXITED) return st.exitCode;
    await sleep(100, deps.signal);
  }
  if (opts.tty) hooks.out(`Session ended, the ephemeral container will not be restarted but may be reattached using 'klet attach ${p.namespace}/${p.name} -c ${name} -i -t' if it is still running`);
  return 0;
}
