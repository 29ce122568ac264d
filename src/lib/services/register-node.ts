/**
 * `klet register-node`: create this node's Node object in a Kubernetes API
 * server, or reconcile an existing one, as the kubelet does on start-up
 * (kubelet_node_status.go registerWithAPIServer); then, with `heartbeat`,
 * keep its Lease and status fresh until the signal aborts.
 *
 * @kubernetes/client-node is imported only here, lazily, when no `api` is
 * given: no other command pays for loading it.
 */
import type { KubeletConfig } from '../kubeletconfig/index.js';
import fs from 'node:fs/promises';
import type { V1Node, V1NodeCondition, V1NodeStatus } from '@kubernetes/client-node';
import type { CallOptions, Input, ListImagesRequest, ListImagesResponse, StatusRequest, StatusResponse, VersionRequest, VersionResponse } from '../cri/index.js';
import { hostIPs as defaultHostIPs } from '../node/addresses.js';
import type { NodeApi } from '../node/api.js';
import { InputError } from '../errors.js';
import { type Reservation, type Taint, addReservations, parseNodeLabels, parseReservation, parseTaints, validateNodeIP, validateNodeName } from '../node/config.js';
import { type HeartbeatEvent, leaseRenewer, runHeartbeat } from '../node/heartbeat.js';
import { readMachineFacts } from '../node/machine.js';
import { pause } from '../util/sleep.js';
import { type NodeFacts, type NodeSpecInput, type RuntimeFacts, initialNode, nodeStatus, reconcileMetadata } from '../node/node-status.js';

/** The CRI calls registration needs. */
export interface NodeCri {
  version(req?: Input<VersionRequest>, opts?: CallOptions): Promise<VersionResponse>;
  status(req?: Input<StatusRequest>, opts?: CallOptions): Promise<StatusResponse>;
  listImages(req?: Input<ListImagesRequest>, opts?: CallOptions): Promise<ListImagesResponse>;
}

export interface RegisterNodeOptions {
  /** Path of the kubeconfig (used when deps.api is not given). */
  kubeconfig: string;
  /** Extra labels (validated with parseNodeLabels). */
  labels: Record<string, string>;
  /** Taints set when the Node is created (never on an existing Node, as the kubelet). */
  taints: Taint[];
  /** kube-reserved + system-reserved. */
  reserved: Reservation;
  maxPods: number;
  nodeIP?: string;
  /** The hard eviction thresholds (allocatable holds back memory.available and nodefs.available); the kubelet's defaults when unset. */
  evictionHard?: Record<string, string>;
  /** The port the kubelet server listens on, for the Node's daemonEndpoints. */
  kubeletPort?: number;
  /** Stay and renew the Lease and status until the signal aborts. */
  heartbeat: boolean;
}

/** The registration options as the user gives them (flags, a config file). */
export interface RegisterNodeInput {
  kubeconfig: string;
  nodeLabels?: string;
  registerWithTaints?: string;
  kubeReserved?: string;
  systemReserved?: string;
  maxPods: number;
  nodeIp?: string;
}

/** Parse and check RegisterNodeInput; an InputError names the option it is about (`input`). */
export function parseRegisterNodeInput(raw: RegisterNodeInput, nodeName: string, heartbeat: boolean): RegisterNodeOptions {
  const named = <T>(input: string, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof InputError && err.input === undefined) throw new InputError(err.text, { input, cause: err });
      throw err;
    }
  };
  named('nodeName', () => validateNodeName(nodeName));
  const nodeIP = raw.nodeIp;
  if (nodeIP !== undefined) named('nodeIp', () => validateNodeIP(nodeIP));
  return {
    kubeconfig: raw.kubeconfig,
    labels: named('nodeLabels', () => parseNodeLabels(raw.nodeLabels ?? '')),
    taints: named('registerWithTaints', () => parseTaints(raw.registerWithTaints ?? '')),
    reserved: addReservations(
      named('kubeReserved', () => parseReservation(raw.kubeReserved ?? '')),
      named('systemReserved', () => parseReservation(raw.systemReserved ?? '')),
    ),
    maxPods: raw.maxPods,
    nodeIP,
    heartbeat,
  };
}

/** The registration options of the node's configuration (lib/kubeletconfig, validated there), for a node with a kubeconfig. */
export function registerNodeOptionsOf(c: KubeletConfig & { flags: { kubeconfig: string } }, heartbeat: boolean): RegisterNodeOptions {
  return {
    kubeconfig: c.flags.kubeconfig,
    labels: c.flags.nodeLabels,
    taints: c.registerWithTaints,
    reserved: c.flags.reserved,
    maxPods: c.maxPods,
    evictionHard: c.evictionHard,
    ...(c.flags.nodeIP !== undefined ? { nodeIP: c.flags.nodeIP } : {}),
    heartbeat,
  };
}

export type RegisterNodeEvent =
  | { kind: 'NodeRegistered'; node: string; uid: string; created: boolean; server: string; conditions: V1NodeCondition[] }
  | HeartbeatEvent;

export interface RegisterNodeDeps {
  cri: NodeCri;
  rootDir: string;
  nodeName: string;
  /** The Node's kubeletVersion (node/version.ts kubeletVersion(), e.g. v1.34.4+klet.0.1.0). */
  kletVersion: string;
  signal: AbortSignal;
  onEvent?: (e: RegisterNodeEvent) => void;
  /** The API server; default: connect with the kubeconfig. */
  api?: NodeApi;
  hostIPs?: () => string[];
  now?: () => Date;
  /** The eviction manager's pressure conditions, read for every status (klet sync). */
  pressure?: () => readonly string[];
  /** Heartbeat intervals (tests). */
  intervals?: Parameters<typeof runHeartbeat>[0]['intervals'];
}

export interface RegisterNodeResult {
  /** The Node as the server has it after registration. */
  node: V1Node;
  created: boolean;
  server: string;
  exitCode: number;
}

/** Runtime name/version, readiness and images from CRI, as the kubelet's node status setters read them. */
export async function runtimeFacts(cri: NodeCri, signal: AbortSignal): Promise<RuntimeFacts> {
  const [v, st, imgs] = await Promise.all([cri.version({}, { signal }), cri.status({}, { signal }), cri.listImages({}, { signal })]);
  const cond = (type: string) => st.status?.conditions.find((c) => c.type === type);
  const why = (c: ReturnType<typeof cond>) => (c ? `reason:${c.reason} message:${c.message}` : 'reason: message:condition not reported');
  const runtime = cond('RuntimeReady');
  const network = cond('NetworkReady');
  return {
    containerRuntimeVersion: `${v.runtimeName}://${v.runtimeVersion}`,
    runtimeReady: runtime?.status === true,
    networkReady: network?.status === true,
    runtimeReason: runtime?.status === true ? undefined : why(runtime),
    networkReason: network?.status === true ? undefined : why(network),
    images: imgs.images.map((i) => ({ names: [...i.repoDigests, ...i.repoTags], sizeBytes: Number(i.size) })),
  };
}

export async function registerNode(opts: RegisterNodeOptions, deps: RegisterNodeDeps): Promise<RegisterNodeResult> {
  validateNodeName(deps.nodeName);
  const now = deps.now ?? (() => new Date());
  const spec: NodeSpecInput = {
    nodeName: deps.nodeName,
    labels: opts.labels,
    taints: opts.taints,
    nodeIP: opts.nodeIP,
    maxPods: opts.maxPods,
    reserved: opts.reserved,
    kletVersion: deps.kletVersion,
    ...(opts.evictionHard !== undefined ? { evictionHard: opts.evictionHard } : {}),
    ...(opts.kubeletPort !== undefined ? { kubeletPort: opts.kubeletPort } : {}),
  };
  const facts = async (signal: AbortSignal): Promise<NodeFacts> => ({
    machine: await readMachineFacts(deps.rootDir),
    runtime: await runtimeFacts(deps.cri, signal),
    hostIPs: (deps.hostIPs ?? defaultHostIPs)(),
    now: now(),
    ...(deps.pressure ? { pressure: deps.pressure() } : {}),
  });

  // The kubelet creates its root dir on start; its filesystem is the node's ephemeral storage.
  await fs.mkdir(deps.rootDir, { recursive: true });
  const api = deps.api ?? (await (await import('../kube/node-api.js')).connectNodeApi(opts.kubeconfig));
  try {
    const signal = deps.signal;
    const f = await facts(signal);
    let node: V1Node;
    let created: boolean;
    let sent: V1NodeStatus;
    const wanted = initialNode(spec, f);
    try {
      node = await api.createNode(wanted, signal);
      created = true;
      sent = wanted.status!;
    } catch (err) {
      if ((err as { reason?: string }).reason !== 'AlreadyExists') throw err;
      created = false;
      const existing = await api.getNode(deps.nodeName, signal);
      if (!existing) throw err; // deleted in between: the caller retries
      const meta = reconcileMetadata(existing, deps.nodeName, f.machine);
      if (meta) await api.patchNodeMetadata(deps.nodeName, meta, signal);
      sent = nodeStatus(spec, f, existing.status?.conditions);
      node = await api.patchNodeStatus(deps.nodeName, sent, signal);
    }
    deps.onEvent?.({ kind: 'NodeRegistered', node: deps.nodeName, uid: node.metadata?.uid ?? '', created, server: api.server, conditions: sent.conditions ?? [] });

    const uid = node.metadata?.uid;
    if (!opts.heartbeat) {
      // One registration still tells the control plane the node is alive now.
      const renewTime = await leaseRenewer(api, deps.nodeName, () => uid, now).renew(signal);
      deps.onEvent?.({ kind: 'LeaseRenewed', renewTime });
    } else {
      await runHeartbeat({
        api,
        nodeName: deps.nodeName,
        nodeUid: () => uid,
        initialStatus: sent,
        computeStatus: async (previous, s) => nodeStatus(spec, await facts(s), previous?.conditions),
        signal,
        onEvent: deps.onEvent,
        intervals: deps.intervals,
        now,
      });
    }
    return { node, created, server: api.server, exitCode: 0 };
  } finally {
    if (!deps.api) api.close();
  }
}

/** The log line of each registration event: registration at info, heartbeats at debug, failures as warnings. */
export function logRegisterNodeEvent(
  e: RegisterNodeEvent,
  nodeName: string,
  log: { info(m: string): void; debug(m: string): void; warn(m: string): void },
): void {
  switch (e.kind) {
    case 'NodeRegistered':
      log.info(`${e.created ? 'registered' : 'updated'} node ${e.node} with ${e.server}`);
      break;
    case 'LeaseRenewed':
      log.debug(`lease kube-node-lease/${nodeName} renewed at ${e.renewTime}`);
      break;
    case 'NodeStatusUpdated':
      log.debug(`node ${nodeName} status sent${e.changed ? ' (changed)' : ''}`);
      break;
    case 'HeartbeatError':
      log.warn(`${e.what} heartbeat: ${e.message}`);
      break;
  }
}

/**
 * Register, then heartbeat, until the signal aborts; a registration that
 * fails (API server away, a transient error) is logged and retried with
 * back-off (the kubelet's registerWithAPIServer loop: 100 ms doubling to 7 s).
 * For `klet sync --kubeconfig`, where the static pods run regardless.
 */
export async function keepRegistered(opts: RegisterNodeOptions, deps: RegisterNodeDeps & { onError: (message: string) => void }): Promise<void> {
  let backoff = 100;
  while (!deps.signal.aborted) {
    try {
      await registerNode({ ...opts, heartbeat: true }, deps);
      return;
    } catch (err) {
      if (deps.signal.aborted) return;
      deps.onError(`registering node ${deps.nodeName}: ${(err as Error).message}`);
      await pause(backoff, deps.signal);
      backoff = Math.min(backoff * 2, 7_000);
    }
  }
}
