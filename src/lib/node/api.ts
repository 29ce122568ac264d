/**
 * What node registration and the heartbeat need from the API server: the
 * node's own Node and Lease, nothing else (all a Node-authorized kubelet may
 * touch there). Implemented over @kubernetes/client-node in lib/kube/node-api.ts;
 * unit tests pass an in-memory fake. Errors are ApiServerError (lib/kube/errors.ts).
 */
import type { V1Lease, V1Node, V1NodeStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

export interface NodeApi {
  /** The API server URL, for messages. */
  readonly server: string;
  /** Requests made so far, by verb (list, watch, get, create, update, patch, delete), when counted. */
  readonly requests?: Readonly<Record<string, number>>;
  /** The Node, or null when it does not exist. */
  getNode(name: string, signal: AbortSignal): Promise<V1Node | null>;
  /** Create it; rejects with reason AlreadyExists when it exists. */
  createNode(node: V1Node, signal: AbortSignal): Promise<V1Node>;
  /** Strategic-merge patch of metadata labels/annotations (through nodes/status, as the kubelet does). */
  patchNodeMetadata(name: string, meta: { labels?: Record<string, string>; annotations?: Record<string, string> }, signal: AbortSignal): Promise<V1Node>;
  /** Merge patch of the listed status fields of nodes/status. */
  patchNodeStatus(name: string, status: V1NodeStatus, signal: AbortSignal): Promise<V1Node>;
  /** The Lease in kube-node-lease, or null. */
  getLease(name: string, signal: AbortSignal): Promise<V1Lease | null>;
  createLease(lease: V1Lease, signal: AbortSignal): Promise<V1Lease>;
  /** Replace it (optimistic concurrency on metadata.resourceVersion: rejects with reason Conflict). */
  updateLease(lease: V1Lease, signal: AbortSignal): Promise<V1Lease>;
  /** The kubeconfig's client certificate was rotated: new connections from now on (in-flight ones finish). */
  reloadCredentials?(): void;
  close(): void;
}

/**
 * The pods a Node-authorized kubelet may see and write: those bound to it
 * (list with fieldSelector spec.nodeName), its mirror pods, pods/status.
 */
export interface PodApi {
  readonly server: string;
  /** Pods with spec.nodeName = nodeName, in every namespace. */
  listNodePods(nodeName: string, signal: AbortSignal): Promise<V1Pod[]>;
  createPod(pod: V1Pod, signal: AbortSignal): Promise<V1Pod>;
  /** Delete with grace period 0 and a UID precondition (never another pod of the same name). */
  deletePod(namespace: string, name: string, uid: string, signal: AbortSignal): Promise<void>;
  /**
   * List and watch the pods bound to the node until the signal aborts
   * (fieldSelector spec.nodeName, resourceVersion kept across reconnects,
   * a relist after 410 Gone or any watch failure, back-off while the server
   * is away). `pods` gets the whole set after the list and after every
   * change; `error` gets each failure (then it retries). Never rejects.
   */
  watchNodePods(nodeName: string, on: { pods(pods: V1Pod[]): void; error(message: string): void }, signal: AbortSignal): Promise<void>;
  /** Merge patch of pods/status, with a UID precondition. */
  patchPodStatus(namespace: string, name: string, uid: string, status: V1PodStatus, signal: AbortSignal): Promise<V1Pod>;
}
