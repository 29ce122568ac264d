/**
 * The order in which a pod's containers stop (KEP-753 sidecars, the
 * kubelet's terminationOrdering): the regular containers first, all at
 * once; then the sidecars (restartable init containers) in reverse spec
 * order, each once every container after it has stopped, so a log shipper
 * or proxy outlives the app it serves. Each container's preStop hook still
 * runs at once; only its SIGTERM waits for its turn, within what is left of
 * the grace period (killContainer).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { isRestartableInit } from './actions.js';

export class TerminationOrdering {
  private readonly stoppedOnes = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  private readonly before = new Map<string, string[]>();

  /** `stopping`: the names of the containers being stopped now. */
  constructor(pod: V1Pod, stopping: readonly string[]) {
    const names = new Set(stopping);
    const sidecars = (pod.spec?.initContainers ?? []).filter(isRestartableInit).map((c) => c.name);
    const regular = [...names].filter((n) => !sidecars.includes(n));
    sidecars.forEach((name, i) => {
      if (names.has(name)) this.before.set(name, [...regular, ...sidecars.slice(i + 1).filter((n) => names.has(n))]);
    });
    for (const n of names) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      this.stoppedOnes.set(n, { promise, resolve });
    }
  }

  /** The containers that must have stopped before `name` is sent SIGTERM. */
  prerequisites(name: string): string[] {
    return this.before.get(name) ?? [];
  }

  /** Resolves once every prerequisite of `name` has stopped. */
  async waitForTurn(name: string): Promise<void> {
    await Promise.all(this.prerequisites(name).map((n) => this.stoppedOnes.get(n)?.promise));
  }

  /** `name` has stopped (or its stop failed: it no longer holds the others up). */
  stopped(name: string): void {
    this.stoppedOnes.get(name)?.resolve();
  }
}

/** The ordering for stopping these containers of the pod, or undefined when the pod has no sidecar (all stop at once). */
export function terminationOrdering(pod: V1Pod, stopping: readonly string[]): TerminationOrdering | undefined {
  return (pod.spec?.initContainers ?? []).some(isRestartableInit) ? new TerminationOrdering(pod, stopping) : undefined;
}
