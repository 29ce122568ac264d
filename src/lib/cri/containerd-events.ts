/**
 * containerd's own event stream (containerd.services.events.v1.Events/
 * Subscribe, served on the same socket as CRI), reduced to what klet uses:
 * the exit of a container's init process in the CRI namespace. The
 * kubelet's evented PLEG (KEP-3386) needs CRI GetContainerEvents, which
 * containerd 1.6 does not serve; its native TaskExit event says the same
 * thing as soon as a container exits. klet uses it only to relist at once
 * (the relist stays the one source of truth). Messages are decoded by hand:
 * four fields of three small messages, not worth a generated proto.
 */
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';

export const SUBSCRIBE_PATH = '/containerd.services.events.v1.Events/Subscribe';
/** The namespace of containerd's CRI plugin. */
export const CRI_NAMESPACE = 'k8s.io';
const TASK_EXIT_TYPE = 'containerd.events.TaskExit';

/** SubscribeRequest { repeated string filters = 1; } */
export function encodeSubscribeRequest(filters: readonly string[]): Buffer {
  const w = new BinaryWriter();
  for (const f of filters) w.uint32(10).string(f);
  return Buffer.from(w.finish());
}

/** A container's init process exited (TaskExit with id == container_id). */
export interface TaskExit {
  namespace: string;
  containerId: string;
}

/**
 * Envelope { timestamp = 1; namespace = 2; topic = 3; Any event = 4 } with
 * Any { type_url = 1; value = 2 } and TaskExit { container_id = 1; id = 2; … }.
 * null for anything but the exit of a container's init process (an exec'd
 * process, a probe, exits with its own id).
 */
export function decodeTaskExit(buf: Uint8Array): TaskExit | null {
  let namespace = '';
  let typeUrl = '';
  let value: Uint8Array | undefined;
  const env = new BinaryReader(buf);
  while (env.pos < env.len) {
    const tag = env.uint32();
    if (tag >>> 3 === 2 && (tag & 7) === 2) namespace = env.string();
    else if (tag >>> 3 === 4 && (tag & 7) === 2) {
      const any = new BinaryReader(env.bytes());
      while (any.pos < any.len) {
        const t = any.uint32();
        if (t >>> 3 === 1 && (t & 7) === 2) typeUrl = any.string();
        else if (t >>> 3 === 2 && (t & 7) === 2) value = any.bytes();
        else any.skip(t & 7);
      }
    } else env.skip(tag & 7);
  }
  if (!typeUrl.endsWith(TASK_EXIT_TYPE) || value === undefined) return null;
  let containerId = '';
  let id = '';
  const ev = new BinaryReader(value);
  while (ev.pos < ev.len) {
    const t = ev.uint32();
    if (t >>> 3 === 1 && (t & 7) === 2) containerId = ev.string();
    else if (t >>> 3 === 2 && (t & 7) === 2) id = ev.string();
    else ev.skip(t & 7);
  }
  if (containerId === '' || id !== containerId) return null;
  return { namespace, containerId };
}
