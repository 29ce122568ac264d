/**
 * Where an exec, attach or port-forward goes, from what the PLEG saw at its
 * last relist (at most a relist period old) instead of a CRI list per
 * request. The kubelet asks the runtime each time (findContainer:
 * GetPods(running only), two CRI lists); klet's CRI round trips cost more
 * than Go's, and they were on every `kubectl exec`'s critical path
 * (bench/README, kubelet-api). A hint only: the kubelet server still asks
 * the runtime when the hint finds nothing, and when the runtime refuses the
 * hinted container or sandbox (it exited or went since the relist), so
 * every answer stays the one the runtime's current state gives.
 */
import type { PodRecordSnapshot } from '../pleg/types.js';

/** The newest running container of this name in the relisted pod (records are newest first). */
export function relistedRunningContainer(record: PodRecordSnapshot | undefined, name: string): string | undefined {
  return record?.containers.find((c) => c.name === name && c.state === 'running')?.id;
}

/** The newest ready sandbox of the relisted pod. */
export function relistedReadySandbox(record: PodRecordSnapshot | undefined): string | undefined {
  return record?.sandboxes.find((s) => s.state === 'ready')?.id;
}
