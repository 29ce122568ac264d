/**
 * `klet top`'s rows from a Summary, as `kubectl top pod` computes and prints them from the
 * metrics API (which metrics-server fills from the same Summary): CPU in millicores from
 * usageNanoCores, rounded up as a Quantity's MilliValue() is; memory as the working set, in Mi
 * rounded down.
 */
import type { Summary } from './summary.js';

export interface TopRow {
  namespace: string;
  pod: string;
  /** Set with containers: one row per container. */
  container?: string;
  /** Millicores over the sampling window; undefined until two readings exist. */
  cpuMillis?: number;
  /** Working set in bytes. */
  memoryBytes?: number;
}

export type TopSort = 'cpu' | 'memory';

export interface TopOptions {
  containers?: boolean;
  sortBy?: TopSort;
  /** Keep only this pod (by UID). */
  podUid?: string;
}

/** Nanocores as a Quantity's MilliValue() gives them: rounded up. */
export function millicores(nanoCores: number): number {
  return Math.ceil(nanoCores / 1e6);
}

/** The rows of `kubectl top pod` (or `--containers`) for a Summary. */
export function topRows(s: Summary, opts: TopOptions = {}): TopRow[] {
  const rows: TopRow[] = [];
  for (const p of s.pods) {
    if (opts.podUid !== undefined && p.podRef.uid !== opts.podUid) continue;
    const base = { namespace: p.podRef.namespace, pod: p.podRef.name };
    if (opts.containers) {
      for (const c of p.containers) {
        const cpu = c.cpu?.usageNanoCores;
        const mem = c.memory?.workingSetBytes;
        rows.push({ ...base, container: c.name, ...(cpu !== undefined ? { cpuMillis: millicores(cpu) } : {}), ...(mem !== undefined ? { memoryBytes: mem } : {}) });
      }
      continue;
    }
    // metrics-server sums the containers' figures; a container without a rate leaves the pod without one.
    const cpus = p.containers.map((c) => c.cpu?.usageNanoCores);
    const mems = p.containers.map((c) => c.memory?.workingSetBytes);
    const cpu = cpus.length > 0 && cpus.every((v) => v !== undefined) ? millicores((cpus as number[]).reduce((a, b) => a + b, 0)) : undefined;
    const mem = mems.length > 0 && mems.every((v) => v !== undefined) ? (mems as number[]).reduce((a, b) => a + b, 0) : undefined;
    rows.push({ ...base, ...(cpu !== undefined ? { cpuMillis: cpu } : {}), ...(mem !== undefined ? { memoryBytes: mem } : {}) });
  }
  if (opts.sortBy === 'cpu') rows.sort((a, b) => (b.cpuMillis ?? -1) - (a.cpuMillis ?? -1));
  if (opts.sortBy === 'memory') rows.sort((a, b) => (b.memoryBytes ?? -1) - (a.memoryBytes ?? -1));
  return rows;
}

/** Whether every row has both figures (the first reading of a new container has no CPU rate yet). */
export function complete(rows: TopRow[]): boolean {
  return rows.every((r) => r.cpuMillis !== undefined && r.memoryBytes !== undefined);
}

/** The table's header and cells, as kubectl top prints them; namespaces as `-A` shows them. */
export function topTable(rows: TopRow[], opts: { namespaces: boolean; containers: boolean }): { header: string[]; rows: string[][] } {
  const header = [...(opts.namespaces ? ['NAMESPACE'] : []), ...(opts.containers ? ['POD', 'NAME'] : ['NAME']), 'CPU(cores)', 'MEMORY(bytes)'];
  return {
    header,
    rows: rows.map((r) => [
      ...(opts.namespaces ? [r.namespace] : []),
      ...(opts.containers ? [r.pod, r.container ?? ''] : [r.pod]),
      r.cpuMillis === undefined ? '<unknown>' : `${r.cpuMillis}m`,
      r.memoryBytes === undefined ? '<unknown>' : `${Math.floor(r.memoryBytes / (1024 * 1024))}Mi`,
    ]),
  };
}
