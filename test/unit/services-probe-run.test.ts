/**
 * Probes in the one-shot services, against the in-memory CRI: run-pod
 * --wait ready waits for the readiness probe, a startup probe that gives up
 * fails the wait at once, and `klet probe`'s service runs configured and
 * ad-hoc probes with exit codes 0, 1 and 2.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KletEventBody } from '../../src/lib/events/types.js';
import { NodeCache } from '../../src/lib/kuberuntime/sync-pod.js';
import type { ServiceDeps } from '../../src/lib/services/deps.js';
import { probe } from '../../src/lib/services/probe.js';
import { runPod } from '../../src/lib/services/run-pod.js';
import { FakeCri } from '../helpers/fake-cri.js';

const NODE = 'node1';
let tmp: string;
let fake: FakeCri;
let events: KletEventBody[];

function deps(): ServiceDeps {
  return {
    cri: fake.client(),
    rootDir: path.join(tmp, 'root'),
    nodeName: NODE,
    signal: new AbortController().signal,
    logRoot: path.join(tmp, 'logs'),
    cache: new NodeCache(),
    onEvent: (e) => events.push(e),
  };
}

/** A pod manifest whose container runs forever, with probes (JSON is YAML). */
function probedPod(name: string, probes: Record<string, unknown>): string {
  const file = path.join(tmp, `${name}.yaml`);
  const c = { name: 'c', image: 'localhost/klet/busybox:1.36', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'sleep 3600'], ...probes };
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [c] } }));
  return file;
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-services-probe-'));
  fake = new FakeCri();
  events = [];
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('run-pod --wait ready with probes', () => {
  it('is Ready only once the readiness probe passes', async () => {
    fake.execResults.set('test -f /ready', { exitCode: 1, stdout: 'not yet' });
    const file = probedPod('web', { readinessProbe: { exec: { command: ['test', '-f', '/ready'] }, periodSeconds: 1 } });
    setTimeout(() => fake.execResults.set('test -f /ready', { exitCode: 0 }), 2500);
    const t0 = Date.now();
    const r = await runPod({ file, goal: 'ready', timeoutMs: 20_000, rm: false }, deps());
    expect(r).toMatchObject({ ok: true });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2400);
    expect(events.some((e) => e.kind === 'Event' && e.reason === 'Unhealthy' && e.message === 'Readiness probe failed: not yet')).toBe(true);
    expect(events.filter((e) => e.kind === 'ProbeResult').map((e) => (e as { result: string }).result)).toEqual(['Failure', 'Success']);
  }, 30_000);

  it('fails at once when the startup probe exhausts its threshold', async () => {
    fake.execResults.set('false', { exitCode: 1, stdout: 'nope' });
    const file = probedPod('slow', { startupProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 2 } });
    const t0 = Date.now();
    const r = await runPod({ file, goal: 'ready', timeoutMs: 60_000, rm: false }, deps());
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(r).toMatchObject({ ok: false, problem: 'container c: startup probe failed 2 times: nope' });
  }, 30_000);
});

describe('probe service', () => {
  it('runs the configured probes and ad-hoc ones: exit 0, 1, and 2 when it cannot run', async () => {
    fake.execResults.set('cat /healthy', { exitCode: 1, stdout: 'missing' });
    const file = probedPod('p', {
      readinessProbe: { exec: { command: ['true'] } },
      livenessProbe: { exec: { command: ['cat', '/healthy'] } },
      startupProbe: { httpGet: { path: '/', port: 'metrics' } },
    });
    await runPod({ file, goal: 'running', timeoutMs: 10_000, rm: false }, deps());
    const ref = `p-${NODE}`;
    expect((await probe({ pod: ref, type: 'readiness' }, deps())).exitCode).toBe(0);
    const live = await probe({ pod: ref, type: 'liveness' }, deps());
    expect(live).toMatchObject({ exitCode: 1, results: [{ probe: 'Liveness', handler: 'exec', result: 'failure', message: 'missing', detail: { exitCode: 1 } }] });
    const startup = await probe({ pod: ref, type: 'startup' }, deps());
    expect(startup).toMatchObject({ exitCode: 2, results: [{ result: 'error', message: 'port "metrics" not found in container "c"' }] });
    expect((await probe({ pod: ref, type: 'all', adHoc: { handler: 'exec', command: 'true' } }, deps())).exitCode).toBe(0);
    await expect(probe({ pod: 'nosuch', type: 'all' }, deps())).rejects.toMatchObject({ exitCode: 2 });
    await expect(probe({ pod: ref, type: 'all', container: 'x' }, deps())).rejects.toMatchObject({ exitCode: 2, message: expect.stringContaining('no container "x"') });
  });
});
