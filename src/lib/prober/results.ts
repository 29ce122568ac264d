/**
 * Probe results that outlive the prober: the sync loop (or runonce) writes
 * each pod's current results to <root>/pods/<uid>/probes.json when one
 * changes, so `klet status`, the local API's /pods and every other process
 * compute `started`, `ready` and the pod's Ready condition from them as
 * the kubelet's status manager does. Results are per container ID: a
 * restarted container has none until its probes run again.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { podDir, writeFileAtomic } from '../kuberuntime/poddir.js';
import type { ProbeResult } from './types.js';

export interface ContainerProbeResults {
  containerId: string;
  startup?: ProbeResult;
  liveness?: ProbeResult;
  readiness?: ProbeResult;
  /** When the readiness result last changed (ISO time): its age, once no prober runs. */
  readinessSince?: string;
}

/** By container name. */
export type PodProbeResults = Record<string, ContainerProbeResults>;

const FILE = 'probes.json';

export async function readProbeResults(rootDir: string, uid: string): Promise<PodProbeResults> {
  try {
    // Synchronously, as the pod dir's other small files (kuberuntime/poddir.ts).
    return JSON.parse(fs.readFileSync(path.join(podDir(rootDir, uid), FILE), 'utf8')) as PodProbeResults;
  } catch {
    return {};
  }
}

/** Written atomically; never recreates a pod dir that was removed. */
export async function writeProbeResults(rootDir: string, uid: string, results: PodProbeResults): Promise<void> {
  const dir = podDir(rootDir, uid);
  if (!fs.existsSync(dir)) return;
  // Through the pod dir's one atomic writer: its temp file's name is one the
  // pod-record write sweeps when a prober was killed mid-write.
  await writeFileAtomic(path.join(dir, FILE), JSON.stringify(results) + '\n', 0o600);
}

/**
 * `started` and `ready` of a container (the kubelet's prober manager
 * UpdatePodStatus): a container with a startup probe has started once that
 * probe succeeded; one with a readiness probe is ready once that succeeded,
 * and never before it started; without probes, running is enough.
 */
export function probedContainerState(
  c: V1Container,
  latest: { id: string; running: boolean },
  results: PodProbeResults | undefined,
): { started: boolean; ready: boolean } {
  if (!latest.running) return { started: false, ready: false };
  const r = results?.[c.name];
  const current = r !== undefined && r.containerId === latest.id ? r : undefined;
  const started = c.startupProbe === undefined || current?.startup === 'Success';
  if (!started) return { started, ready: false };
  const ready = c.readinessProbe === undefined || current?.readiness === 'Success';
  return { started, ready };
}

/**
 * What is known of a running container's readiness when no prober runs (no
 * `klet sync` on the root dir, e.g. after a runonce): its readiness probe's
 * last result and since when, or none. The kubelet keeps probing while it
 * runs; nothing does here, so the pod's READY is the last result, not a
 * current one. One entry per running container that has a readiness probe.
 */
export function staleReadiness(
  pod: V1Pod,
  results: PodProbeResults,
): Array<{ container: string; result: ProbeResult | undefined; since: string | undefined }> {
  const out: Array<{ container: string; result: ProbeResult | undefined; since: string | undefined }> = [];
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    if (c.readinessProbe === undefined) continue;
    const st = statuses.find((s) => s.name === c.name);
    if (st?.state?.running === undefined || st.containerID === undefined) continue;
    const r = results[c.name];
    const current = r !== undefined && st.containerID.endsWith(`://${r.containerId}`) ? r : undefined;
    out.push({ container: c.name, result: current?.readiness, since: current?.readinessSince });
  }
  return out;
}
