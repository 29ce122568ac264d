/**
 * `klet top`: the pods' CPU and memory as `kubectl top pod` shows them. From the running
 * `klet sync` of the root dir (its local API's /stats/summary, rates over its last 10 s sample);
 * without one, from the runtime directly: a reading, the window, and a second reading.
 */
import { KletError } from '../errors.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { DEFAULT_POD_LOGS_ROOT } from '../logs/paths.js';
import { LocalApiUnavailableError, localApiRequest, localApiSocketPath } from '../server/client.js';
import { StatsProvider } from '../stats/provider.js';
import type { Summary } from '../stats/summary.js';
import { complete, topRows, type TopRow, type TopSort } from '../stats/top.js';
import { sleep, type ServiceDeps } from './deps.js';
import { findPods } from './lookup.js';

export interface TopOptions {
  /** One pod: ns/name, name (namespace default), or a UID prefix. */
  pod?: string;
  containers?: boolean;
  sortBy?: TopSort;
  /** Without a running sync: how long between the two readings a CPU rate is taken over. */
  windowMs: number;
}

export interface TopResult {
  source: 'sync' | 'runtime';
  socketPath: string;
  summary: Summary;
  rows: TopRow[];
}

/** The Summary from the running sync, or undefined when none serves the root dir. */
async function syncSummary(socketPath: string, signal: AbortSignal): Promise<Summary | undefined> {
  try {
    const res = await localApiRequest(socketPath, '/stats/summary?only_cpu_and_memory=true', { signal });
    if (res.status !== 200) throw new KletError(`local API at ${socketPath}: /stats/summary answered ${res.status}: ${res.body.trim()}`);
    return JSON.parse(res.body) as Summary;
  } catch (err) {
    if (err instanceof LocalApiUnavailableError) return undefined;
    throw err;
  }
}

/** Reads the node's pods' usage again and again: each call of next() is one table. */
export class TopReader {
  private provider?: StatsProvider;
  private podUid?: string | null;

  constructor(
    private readonly opts: TopOptions,
    private readonly deps: ServiceDeps,
  ) {}

  private async uid(): Promise<string | undefined> {
    if (this.opts.pod === undefined) return undefined;
    this.podUid ??= (await findPods(this.deps, [this.opts.pod]))[0]?.uid ?? null;
    return this.podUid ?? undefined;
  }

  /** One reading. The first without a sync waits the window. */
  async next(): Promise<TopResult> {
    const { deps, opts } = this;
    const socketPath = localApiSocketPath(deps.rootDir);
    const podUid = await this.uid();
    const rowsOf = (s: Summary) => topRows(s, { containers: opts.containers, sortBy: opts.sortBy, ...(podUid !== undefined ? { podUid } : {}) });
    let summary = await syncSummary(socketPath, deps.signal);
    if (summary !== undefined) {
      // A container the sync has not sampled yet gets its first reading now: its rate is there a moment later.
      if (!complete(rowsOf(summary))) {
        await sleep(Math.max(opts.windowMs, 600), deps.signal);
        summary = (await syncSummary(socketPath, deps.signal)) ?? summary;
      }
      return { source: 'sync', socketPath, summary, rows: rowsOf(summary) };
    }
    if (this.provider === undefined) {
      this.provider = new StatsProvider({
        cri: deps.cri,
        owner: instanceSelector(deps),
        nodeName: deps.nodeName,
        rootDir: deps.rootDir,
        logRoot: deps.logRoot ?? DEFAULT_POD_LOGS_ROOT,
        startTime: new Date(),
      });
      await this.provider.sample(deps.signal);
      await sleep(opts.windowMs, deps.signal);
    }
    summary = await this.provider.summary({ signal: deps.signal, onlyCpuAndMemory: true });
    await this.provider.sample(deps.signal);
    return { source: 'runtime', socketPath, summary, rows: rowsOf(summary) };
  }
}
