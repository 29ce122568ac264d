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
import type { V1Container } from '@kubernetes/client-node';
import { podDir, writeFileAtomic } from '../kuberuntime/poddir.js';
import type { ProbeResult } from './types.js';

export interface ContainerProbeResults {
  containerId: string;
  startup?: ProbeResult;
  liveness?: ProbeResult;
  readiness?: ProbeResult;
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
