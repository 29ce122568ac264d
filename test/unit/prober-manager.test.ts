/**
 * The prober manager's workers with an in-memory ExecSync and runtime
 * status: thresholds, the kubelet's events, liveness on hold until the
 * container is replaced, startup gating, fresh results for a new
 * container, results written for other processes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { KletEventBody } from '../../src/lib/events/types.js';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../../src/lib/kuberuntime/runtime-status.js';
import { ProberManager, type ProbeUpdate } from '../../src/lib/prober/manager.js';
import { readProbeResults } from '../../src/lib/prober/results.js';
import type { ExecCri } from '../../src/lib/prober/exec.js';

const managers: ProberManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.stop();
});

/** ExecSync answering by command (argv[0]): exit codes the test changes. */
function fakeCri(exit: Record<string, number>): ExecCri & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    execSync: async (req) => {
      const cmd = (req.cmd ?? [])[0] ?? '';
      calls.push(cmd);
      return { exitCode: exit[cmd] ?? 0, stdout: Buffer.from(`${cmd} said ${exit[cmd] ?? 0}`), stderr: Buffer.alloc(0) };
    },
  };
}

function runningContainer(id: string, extra: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  const now = Date.now();
  return {
    id, name: 'c', sandboxId: 'sb', state: 'running', createdAt: now, startedAt: now, finishedAt: 0, exitCode: 0, reason: '', message: '',
    image: 'busybox', imageRef: 'sha256:x', hash: 'h', restartCount: 0, type: 'regular', logPath: '', ...extra,
  };
}

function podWith(c: Partial<V1Container>): V1Pod {
  return { metadata: { name: 'p', namespace: 'ns', uid: 'u1' }, spec: { containers: [{ name: 'c', image: 'busybox', ...c }] } };
}

function status(...containers: RuntimeContainerStatus[]): RuntimePodStatus {
  return { uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [{ id: 'sb', ready: true, attempt: 0, createdAt: 0, ip: '10.0.0.9', additionalIps: [], hostNetwork: false }], containers };
}

function setup(cri: ExecCri, rootDir?: string) {
  const events: KletEventBody[] = [];
  const updates: ProbeUpdate[] = [];
  const m = new ProberManager({ cri, hostIPs: () => ['192.0.2.1'], rootDir, onEvent: (e) => events.push(e), onUpdate: (u) => updates.push(u) });
  managers.push(m);
  return { m, events, updates };
}

const until = async (fn: () => boolean, ms = 8000): Promise<void> => {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('ProberManager', () => {
  it('fails liveness only after failureThreshold failures in a row, with an Unhealthy event each time, then holds until the container is replaced', async () => {
    const cri = fakeCri({ live: 1 });
    const { m, events, updates } = setup(cri);
    const pod = podWith({ livenessProbe: { exec: { command: ['live'] }, periodSeconds: 1, failureThreshold: 2 } });
    m.addPod(pod);
    m.updatePodStatus('u1', status(runningContainer('c1')));
    await until(() => updates.some((u) => u.result === 'Failure'));
    expect(m.get('Liveness', 'c1')).toBe('Failure');
    const unhealthy = events.filter((e) => e.kind === 'Event' && e.reason === 'Unhealthy');
    expect(unhealthy.map((e) => (e as { message: string }).message)).toEqual(['Liveness probe failed: live said 1', 'Liveness probe failed: live said 1']);
    // About the probed container, as the kubelet's event reference (spec.containers{c}) is.
    expect(unhealthy[0]).toMatchObject({ pod: 'ns/p', uid: 'u1', container: 'c' });
    expect(unhealthy[0]).not.toHaveProperty('init');
    // On hold: no more runs for c1.
    const n = cri.calls.length;
    await new Promise((r) => setTimeout(r, 2200));
    expect(cri.calls.length).toBe(n);
    // The restarted container gets a fresh (initial Success) result and is probed again.
    m.updatePodStatus('u1', status(runningContainer('c2', { restartCount: 1 })));
    await until(() => cri.calls.length > n);
    expect(m.get('Liveness', 'c2')).toBe('Success');
    expect(m.get('Liveness', 'c1')).toBeUndefined();
  });

  it('runs liveness and readiness only once the startup probe succeeded', async () => {
    const exit = { start: 1, live: 0, ready: 0 };
    const cri = fakeCri(exit);
    const { m } = setup(cri);
    m.addPod(podWith({
      startupProbe: { exec: { command: ['start'] }, periodSeconds: 1, failureThreshold: 100 },
      livenessProbe: { exec: { command: ['live'] }, periodSeconds: 1 },
      readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 1 },
    }));
    m.updatePodStatus('u1', status(runningContainer('c1')));
    await new Promise((r) => setTimeout(r, 2500));
    expect(new Set(cri.calls)).toEqual(new Set(['start']));
    expect(m.started('u1', 'c', 'c1')).toBe(false);
    exit.start = 0;
    await until(() => m.get('Readiness', 'c1') === 'Success');
    expect(m.started('u1', 'c', 'c1')).toBe(true);
    // Readiness runs at once when started; liveness at its next tick.
    await until(() => cri.calls.includes('live'));
    const after = cri.calls.lastIndexOf('start');
    await new Promise((r) => setTimeout(r, 1500));
    expect(cri.calls.lastIndexOf('start')).toBe(after); // startup stops once passed
  });

  it('probes readiness as soon as the startup probe succeeds, not a readiness period later', async () => {
    const exit = { start: 1, ready: 0 };
    const cri = fakeCri(exit);
    const { m } = setup(cri);
    m.addPod(podWith({
      startupProbe: { exec: { command: ['start'] }, periodSeconds: 1, failureThreshold: 100 },
      readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 60 },
    }));
    m.updatePodStatus('u1', status(runningContainer('c1')));
    await until(() => cri.calls.includes('start'));
    exit.start = 0;
    const t0 = Date.now();
    await until(() => m.get('Readiness', 'c1') === 'Success', 5000);
    // Without the trigger the readiness worker would wait out its 60 s period.
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('honours initialDelaySeconds and successThreshold, and writes results for other processes', async () => {
    const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-prober-'));
    fs.mkdirSync(path.join(rootDir, 'pods', 'u1'), { recursive: true });
    try {
      const cri = fakeCri({});
      const { m } = setup(cri, rootDir);
      m.addPod(podWith({ readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 1, initialDelaySeconds: 2, successThreshold: 2 } }));
      const t0 = Date.now();
      m.updatePodStatus('u1', status(runningContainer('c1', { startedAt: t0 })));
      await until(() => cri.calls.length > 0);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
      expect(m.get('Readiness', 'c1')).toBe('Failure'); // one success of two
      await until(() => m.get('Readiness', 'c1') === 'Success');
      expect(cri.calls.length).toBe(2);
      await m.flush();
      // With when the result was given: its age, once no prober runs (klet status after a runonce).
      expect(await readProbeResults(rootDir, 'u1')).toEqual({ c: { containerId: 'c1', readiness: 'Success', readinessSince: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) } });
    } finally {
      fs.rmSync(rootDir, { recursive: true, force: true });
    }
  });

  it('reports a probe that cannot run as errored and keeps the result', async () => {
    const { m, events } = setup(fakeCri({}));
    m.addPod(podWith({ readinessProbe: { httpGet: { path: '/', port: 'metrics' }, periodSeconds: 1 } }));
    m.updatePodStatus('u1', status(runningContainer('c1')));
    await until(() => events.some((e) => e.kind === 'Event'));
    expect(events.find((e) => e.kind === 'Event')).toMatchObject({ reason: 'Unhealthy', message: 'Readiness probe errored: port "metrics" not found in container "c"' });
    expect(m.get('Readiness', 'c1')).toBe('Failure');
  });
});

describe('probe slots', () => {
  it('wakes workers whose runs fall in the same slot with one timer, on the slot grid, spread by the initial jitter', async () => {
    // A clock on the grid (every worker starts at the same instant, 0 ms into
    // a slot): with a real clock the 10 and 20 ms offsets below straddle a
    // slot boundary whenever the test starts 80-100 ms into a slot.
    vi.useFakeTimers({ now: 1_700_000_000_000 });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const runs: { dueAt: number; startedAt: number; container: string }[] = [];
    let r = 0;
    const m = new ProberManager({
      cri: fakeCri({}),
      hostIPs: () => [],
      jitterAtStart: true,
      // Two workers in the first slot, two in the sixth.
      random: () => [0.01, 0.02, 0.51, 0.52][r++ % 4]!,
      onRun: (x) => runs.push(x),
    });
    managers.push(m);
    const containers = ['a', 'b', 'c', 'd'].map((name) => ({ name, image: 'busybox', livenessProbe: { exec: { command: ['ok'] }, periodSeconds: 1 } }));
    m.addPod({ metadata: { name: 'p', namespace: 'ns', uid: 'u1' }, spec: { containers } });
    m.updatePodStatus('u1', status(...['a', 'b', 'c', 'd'].map((n) => runningContainer(`${n}1`, { name: n }))));
    expect(m.slots.pending).toBe(2);
    await vi.advanceTimersByTimeAsync(3500);
    expect(runs.length).toBeGreaterThanOrEqual(12);
    for (const x of runs) expect(x.dueAt % 100).toBe(0);
    const first = new Map(['a', 'b', 'c', 'd'].map((n) => [n, runs.find((x) => x.container === n)!.dueAt]));
    expect(first.get('a')).toBe(first.get('b'));
    expect(first.get('c')).toBe(first.get('d'));
    expect(first.get('c')! - first.get('a')!).toBe(500);
  });
});
