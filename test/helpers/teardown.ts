/**
 * The afterAll of a test file that runs `klet sync` against a private runtime
 * (and often a test cluster): every step runs, and a failure of any fails the
 * file. Promise.allSettled alone swallowed them, and each swallowed failure of
 * the runtime's stop() left a /tmp/klet-test-* root dir with mounts behind.
 */
import { deleteSyncedPods } from './sync.js';

interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Kill the syncs, delete every pod they left (deleteSyncedPods), then stop
 * the runtime, even when a delete failed (its stop() names what was left and
 * removes nothing through a mount); `others` (a test cluster) are stopped
 * meanwhile. Then throws one error naming every step that failed.
 */
export async function teardown(runtime: Stoppable | undefined, ...others: Array<Stoppable | undefined>): Promise<void> {
  const failures: string[] = [];
  const failed = (err: unknown) => void failures.push(err instanceof Error ? err.message : String(err));
  const runtimeDone = (async () => {
    await deleteSyncedPods().catch(failed);
    await runtime?.stop().catch(failed);
  })();
  await Promise.all([runtimeDone, ...others.map((o) => o?.stop().catch(failed))]);
  if (failures.length > 0) throw new Error(`teardown failed:\n${failures.join('\n')}`);
}
