/**
 * Debugging a pod on the node: `klet exec`, `klet attach` and
 * `klet port-forward`, as kubectl does them through the kubelet, but
 * straight to the runtime: CRI Exec/Attach/PortForward answer a URL on the
 * runtime's streaming server, and the SPDY client (streaming/) speaks to it.
 * Pods are named as `klet logs` names them; only this klet's containers are
 * ever reached.
 */
import type { V1Container } from '@kubernetes/client-node';
import net from 'node:net';
import { ContainerState, PodSandboxState } from '../cri/gen/api.js';
import { InputError, NotFoundError, errorMessage } from '../errors.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL, instanceSelector } from '../kuberuntime/labels.js';
import { PortForwardSession, type RemoteCommandIo, runRemoteCommand } from '../streaming/remote.js';
import type { ServiceDeps } from './deps.js';
import { type KnownPod, findPods } from './lookup.js';

/** kubectl's annotation naming the container commands default to. */
export const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';

export interface TargetOptions {
  /** ns/name, name or a UID prefix. */
  pod: string;
  container?: string;
}

/** The pod and the container a command acts on; `defaulted` when the pod has several and none was named (kubectl says so). */
export interface Target {
  pod: KnownPod;
  container: string;
  defaulted?: { from: string[] };
  containerId: string;
}

function specContainers(pod: KnownPod): V1Container[] {
  const s = pod.spec?.spec;
  return [...(s?.containers ?? []), ...(s?.initContainers ?? []), ...((s?.ephemeralContainers ?? []) as V1Container[])];
}

/** Resolve the pod and container (kubectl's defaulting: the annotation, else the first container) and find it running. */
export async function resolveTarget(opts: TargetOptions, deps: ServiceDeps): Promise<Target> {
  const [pod] = await findPods(deps, [opts.pod]);
  const p = pod!;
  const all = specContainers(p).map((c) => c.name);
  let container = opts.container;
  let defaulted: Target['defaulted'];
  if (container === undefined) {
    const apps = p.spec?.spec?.containers?.map((c) => c.name) ?? [];
    const annotated = p.spec?.metadata?.annotations?.[DEFAULT_CONTAINER_ANNOTATION];
    container = annotated !== undefined && all.includes(annotated) ? annotated : apps[0];
    if (container === undefined) throw new NotFoundError(`pod ${p.namespace}/${p.name}: klet has no spec of it to pick a container from; name one`, { input: 'container' });
    if (apps.length > 1 && annotated === undefined) defaulted = { from: apps };
  } else if (all.length > 0 && !all.includes(container)) {
    throw new NotFoundError(`container ${container} is not valid for pod ${p.namespace}/${p.name}, choose one of: [${all.join(' ')}]`, { input: 'container' });
  }
  const res = await deps.cri.listContainers(
    { filter: { labelSelector: { ...instanceSelector(deps), [POD_UID_LABEL]: p.uid, [CONTAINER_NAME_LABEL]: container }, state: { state: ContainerState.CONTAINER_RUNNING } } },
    { signal: deps.signal },
  );
  const running = res.containers.sort((a, b) => Number(b.createdAt - a.createdAt))[0];
  if (running === undefined) throw new NotFoundError(`container ${container} of pod ${p.namespace}/${p.name} is not running`);
  return { pod: p, container, containerId: running.id, ...(defaulted ? { defaulted } : {}) };
}

export interface ExecOptions extends TargetOptions {
  command: string[];
  stdin: boolean;
  tty: boolean;
}

/** Run a command in a running container; resolves to its exit code. */
export async function execInPod(target: Target, opts: ExecOptions, io: RemoteCommandIo, deps: ServiceDeps): Promise<number> {
  if (opts.command.length === 0) throw new InputError('no command given: put it after --', { input: 'command' });
  const { url } = await deps.cri.exec(
    { containerId: target.containerId, cmd: opts.command, stdin: opts.stdin, stdout: true, stderr: !opts.tty, tty: opts.tty },
    { signal: deps.signal },
  );
  return runRemoteCommand(url, { ...io, ...(opts.stdin ? {} : { stdin: undefined }), tty: opts.tty }, deps.signal);
}

/**
 * Attach to the container's main process: its output, and with `stdin` its
 * input (when the container was made with stdin open). The TTY is the
 * container's own. Resolves when the process ends or the signal aborts.
 */
export async function attachToPod(target: Target, opts: { stdin: boolean }, io: RemoteCommandIo, deps: ServiceDeps): Promise<number> {
  const spec = specContainers(target.pod).find((c) => c.name === target.container);
  const tty = spec?.tty === true;
  const { url } = await deps.cri.attach({ containerId: target.containerId, stdin: opts.stdin, stdout: true, stderr: !tty, tty }, { signal: deps.signal });
  return runRemoteCommand(url, { ...io, ...(opts.stdin ? {} : { stdin: undefined }), tty }, deps.signal);
}

export interface PortMapping {
  /** 0 picks a free port. */
  local: number;
  remote: number;
}

/** `[LOCAL:]REMOTE` as kubectl port-forward takes it (`:REMOTE` picks a free local port). */
export function parsePortMapping(text: string): PortMapping {
  const m = /^(?:(\d*):)?(\d+)$/.exec(text);
  const port = (s: string) => (/^\d{1,5}$/.test(s) && Number(s) <= 65535 ? Number(s) : NaN);
  if (!m) throw new InputError(`"${text}" is not a port mapping ([LOCAL:]REMOTE)`, { input: 'ports' });
  const remote = port(m[2]!);
  const local = m[1] === undefined ? remote : m[1] === '' ? 0 : port(m[1]);
  if (!(remote >= 1) || Number.isNaN(local)) throw new InputError(`"${text}": ports are 1-65535 (0 or nothing before ":" for any free local port)`, { input: 'ports' });
  return { local, remote };
}

export interface PortForwardOptions {
  pod: string;
  ports: PortMapping[];
  /** Local addresses to listen on (kubectl's default: localhost, both families). */
  addresses: string[];
}

export interface PortForwardHooks {
  /** Once per local listener, with the port actually bound. */
  listening(address: string, local: number, remote: number): void;
  /** A forwarded connection that failed (kubectl's "error forwarding port …" line). */
  connectionError(message: string): void;
}

/**
 * Forward local ports to the pod until the signal aborts or the runtime's
 * session ends (then it rejects: the pod went away). Every local connection
 * gets its own stream pair on one session.
 */
export async function portForward(opts: PortForwardOptions, deps: ServiceDeps, hooks: PortForwardHooks): Promise<void> {
  if (opts.ports.length === 0) throw new InputError('no port given: name at least one [LOCAL:]REMOTE', { input: 'ports' });
  const [pod] = await findPods(deps, [opts.pod]);
  const p = pod!;
  const sandboxes = await deps.cri.listPodSandbox(
    { filter: { labelSelector: { ...instanceSelector(deps), [POD_UID_LABEL]: p.uid }, state: { state: PodSandboxState.SANDBOX_READY } } },
    { signal: deps.signal },
  );
  const sandbox = sandboxes.items.sort((a, b) => Number(b.createdAt - a.createdAt))[0];
  if (sandbox === undefined) throw new NotFoundError(`pod ${p.namespace}/${p.name} has no running sandbox`);
  const { url } = await deps.cri.portForward({ podSandboxId: sandbox.id, port: opts.ports.map((m) => m.remote) }, { signal: deps.signal });
  const session = await PortForwardSession.open(url, deps.signal);
  const servers: net.Server[] = [];
  const sockets = new Set<net.Socket>();
  try {
    for (const mapping of opts.ports) {
      let local = mapping.local;
      let bound = 0;
      for (const address of opts.addresses) {
        const server = net.createServer((socket) => {
          sockets.add(socket);
          socket.once('close', () => sockets.delete(socket));
          void forwardConnection(session, socket, local, mapping.remote, hooks);
        });
        try {
          await new Promise<void>((resolve, reject) => {
            server.once('error', reject);
            server.listen(local, address, () => resolve());
          });
        } catch (err) {
          // kubectl listens on both loopback families and is content with one.
          if ((err as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL' || (err as NodeJS.ErrnoException).code === 'EAFNOSUPPORT') continue;
          throw new InputError(`cannot listen on ${address}:${local}: ${errorMessage(err)}`, { input: 'ports' });
        }
        servers.push(server);
        local = (server.address() as net.AddressInfo).port;
        bound++;
        hooks.listening(address, local, mapping.remote);
      }
      if (bound === 0) throw new InputError(`cannot listen on any of ${opts.addresses.join(', ')}`, { input: 'address' });
    }
    const aborted = new Promise<void>((resolve) => {
      if (deps.signal.aborted) resolve();
      deps.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    const lost = session.closed.then(() => 'lost' as const);
    if ((await Promise.race([aborted.then(() => 'aborted' as const), lost])) === 'lost' && !deps.signal.aborted) {
      throw new NotFoundError(`lost connection to pod ${p.namespace}/${p.name}`);
    }
  } finally {
    for (const s of servers) s.close();
    for (const s of sockets) s.destroy();
    session.close();
  }
}

async function forwardConnection(session: PortForwardSession, socket: net.Socket, local: number, port: number, hooks: PortForwardHooks): Promise<void> {
  socket.pause();
  let conn;
  try {
    conn = await session.connect(port);
  } catch (err) {
    hooks.connectionError(`error creating forwarding stream for port ${local} -> ${port}: ${errorMessage(err)}`);
    socket.destroy();
    return;
  }
  const { data, error } = conn;
  data.on('data', (b: Buffer) => socket.write(b));
  data.once('end', () => socket.end());
  data.once('close', () => socket.destroy());
  socket.on('data', (b: Buffer) => data.write(b));
  socket.once('end', () => data.end());
  socket.once('close', () => data.end());
  socket.on('error', () => data.cancel());
  socket.resume();
  const message = (await error).trim();
  if (message !== '') {
    // The runtime's message names the port and the sandbox; kubectl prints it so.
    hooks.connectionError(`an error occurred forwarding ${local} -> ${port}: ${message}`);
    socket.destroy();
  }
}
