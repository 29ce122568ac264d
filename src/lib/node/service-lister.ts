/**
 * The cluster's Services, for the service environment variables (the
 * kubelet's service informer in NewMainKubelet): one list+watch of the
 * Services of every namespace whose clusterIP is not None (headless ones
 * give no variables), started with the sync loop in cluster mode only. The
 * last list stands while the watch reconnects.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { ServiceSource } from '../kuberuntime/env.js';

/** What the lister needs from the API server (implemented in lib/kube/node-api.ts). */
export interface ServiceApi {
  /**
   * List and watch the Services of all namespaces with a cluster IP (fieldSelector
   * spec.clusterIP!=None) until the signal aborts: `items` gets the whole set after
   * each list and change, `error` each failure (then it retries). Never rejects.
   */
  watchServices(on: { items(items: V1Service[]): void; error(message: string): void }, signal: AbortSignal): Promise<void>;
}

export class ServiceLister implements ServiceSource {
  private items: readonly V1Service[] = [];
  private listed = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly o: { api: ServiceApi; onWarning?: (message: string) => void }) {}

  /** Listed at least once (the informer's HasSynced). */
  get synced(): boolean {
    return this.listed;
  }

  list(): readonly V1Service[] {
    return this.items;
  }

  /** Run the list+watch until the signal aborts. Never rejects. */
  run(signal: AbortSignal): Promise<void> {
    return this.o.api.watchServices(
      {
        items: (items) => {
          this.items = items;
          this.listed = true;
          for (const w of this.waiters.splice(0)) w();
        },
        error: (m) => this.o.onWarning?.(`services: ${m}`),
      },
      signal,
    );
  }

  /** Resolve once listed, or after timeoutMs, or when the signal aborts (whichever is first). */
  async waitSynced(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.listed || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.push(done);
    });
  }
}
