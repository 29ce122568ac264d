/**
 * The relisting PLEG against a real containerd (1.6): sandboxes and
 * containers created directly through CRI with the kubelet's labels, and the
 * events the running PLEG delivers on its channel as they start, exit and
 * go away. Tests run in order and share the pod they create.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient, type ContainerConfig, type DeepPartial, type PodSandboxConfig } from '../../src/lib/cri/index.js';
import { detectEventedSupport, GenericPLEG, type PlegEvent, type PlegEventType } from '../../src/lib/pleg/index.js';
import { relistOnContainerExit } from '../../src/lib/pleg/exit-trigger.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/** The kubelet's default relist period. */
const PERIOD_MS = 1000;
/** One relist's own duration, on a loaded 2-CPU machine, on top of the period. */
const RELIST_SLACK_MS = 750;

let rt: TestRuntime | undefined;
let cri: CriClient;
let pleg: GenericPLEG | undefined;

const uid = randomUUID();
const podName = 'pleg-web';
const namespace = 'pleg-test';
let sandboxId = '';
let foreignSandboxId = '';
let appId = '';
let jobId = '';

/** Every event taken from the channel so far, in order. */
const seen: PlegEvent[] = [];

/** The first event (already taken or still to come) that matches; fails after `timeoutMs`. */
async function waitForEvent(type: PlegEventType, containerId: string, timeoutMs = 20_000): Promise<PlegEvent & { receivedAt: number }> {
  const match = (e: PlegEvent) => e.type === type && e.containerId === containerId;
  const earlier = seen.find(match);
  if (earlier) return { ...earlier, receivedAt: NaN };
  const signal = AbortSignal.timeout(timeoutMs);
  for (;;) {
    let e: PlegEvent;
    try {
      e = await (pleg as GenericPLEG).events.next(signal);
    } catch {
      const saw = seen.map((x) => `${x.type} ${x.containerId.slice(0, 12)}`).join(', ');
      throw new Error(`no ${type} for ${containerId.slice(0, 12)} within ${timeoutMs} ms; saw: ${saw || 'nothing'}; last relist ${JSON.stringify(pleg?.lastRelist)}`);
    }
    seen.push(e);
    if (match(e)) return { ...e, receivedAt: Date.now() };
  }
}

/** The events seen for one id, as types. */
const historyOf = (id: string): PlegEventType[] => seen.filter((e) => e.containerId === id).map((e) => e.type);

function sandboxConfig(): DeepPartial<PodSandboxConfig> {
  return {
    metadata: { name: podName, namespace, uid, attempt: 0 },
    hostname: podName,
    logDirectory: path.join((rt as TestRuntime).rootDir, 'logs', uid),
    labels: {
      'io.kubernetes.pod.name': podName,
      'io.kubernetes.pod.namespace': namespace,
      'io.kubernetes.pod.uid': uid,
      app: 'web',
    },
  };
}

function containerConfig(name: string, script: string, restartCount = 0): DeepPartial<ContainerConfig> {
  return {
    metadata: { name, attempt: restartCount },
    image: { image: (rt as TestRuntime).images.busybox },
    command: ['sh', '-c', script],
    logPath: `${name}/${restartCount}.log`,
    labels: {
      'io.kubernetes.pod.name': podName,
      'io.kubernetes.pod.namespace': namespace,
      'io.kubernetes.pod.uid': uid,
      'io.kubernetes.container.name': name,
    },
    annotations: {
      'io.kubernetes.container.hash': `hash-${name}`,
      'io.kubernetes.container.restartCount': String(restartCount),
    },
  };
}

async function runContainer(name: string, script: string, restartCount = 0): Promise<string> {
  const { containerId } = await cri.createContainer({
    podSandboxId: sandboxId,
    sandboxConfig: sandboxConfig(),
    config: containerConfig(name, script, restartCount),
  });
  await cri.startContainer({ containerId });
  return containerId;
}

/** Nanoseconds (CRI) to epoch milliseconds. */
const nsToMs = (ns: bigint): number => Number(ns / 1_000_000n);

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint, { timeoutMs: 60_000 });
  pleg = new GenericPLEG({ cri, relistPeriodMs: PERIOD_MS });
  pleg.start();
});

afterAll(async () => {
  await pleg?.stop();
  if (rt === undefined) return;
  try {
    const { items } = await cri.listPodSandbox({});
    for (const sb of items) {
      await cri.stopPodSandbox({ podSandboxId: sb.id });
      await cri.removePodSandbox({ podSandboxId: sb.id });
    }
    const { containers } = await cri.listContainers({});
    for (const c of containers) await cri.removeContainer({ containerId: c.id });
  } finally {
    cri.close();
    await rt.stop();
  }
});

describe('GenericPLEG against containerd', () => {
  it('a sandbox with the kubelet labels gives ContainerStarted with its id; one without them gives nothing', async () => {
    const [own, foreign] = await Promise.all([
      cri.runPodSandbox({ config: sandboxConfig() }),
      // Not the kubelet's: no io.kubernetes.pod.uid label.
      cri.runPodSandbox({
        config: {
          metadata: { name: 'foreign', namespace: 'other', uid: randomUUID(), attempt: 0 },
          hostname: 'foreign',
          labels: { app: 'foreign' },
        },
      }),
    ]);
    sandboxId = own.podSandboxId;
    foreignSandboxId = foreign.podSandboxId;
    const e = await waitForEvent('ContainerStarted', sandboxId);
    expect(e.podUid).toBe(uid);

    const record = pleg?.podRecords().get(uid);
    expect(record).toMatchObject({ uid, name: podName, namespace });
    expect(record?.sandboxes).toEqual([{ id: sandboxId, state: 'ready', createdAt: expect.any(BigInt), attempt: 0 }]);
    expect(record?.containers).toEqual([]);
  });

  it('a running container gives ContainerStarted; its record carries name, hash and restart count', async () => {
    appId = await runContainer('app', "trap 'exit 0' TERM; sleep 2147483647 & wait", 2);
    const e = await waitForEvent('ContainerStarted', appId);
    expect(e.podUid).toBe(uid);
    const app = pleg?.podRecords().get(uid)?.containers.find((c) => c.id === appId);
    expect(app).toMatchObject({ name: 'app', state: 'running', sandboxId, restartCount: 2, hash: 'hash-app', attempt: 2 });
    expect(typeof app?.createdAt).toBe('bigint');
    expect(app?.imageRef).toMatch(/^sha256:/);
  });

  it("containerd's event service reports a container's exit (not an exec'd process's), and a PLEG relists on it at once", async () => {
    const ctl = new AbortController();
    const exits: string[] = [];
    const watching = (async () => {
      try {
        for await (const e of cri.containerdTaskExits({ signal: ctl.signal })) exits.push(e.containerId);
      } catch (err) {
        if (!ctl.signal.aborted) throw err;
      }
    })();
    // A second PLEG whose period is far away: only the exit can make it relist.
    const eventDriven = new GenericPLEG({ cri, relistPeriodMs: 600_000 });
    eventDriven.start();
    const trigger = relistOnContainerExit(cri, eventDriven, ctl.signal);
    try {
      await new Promise((r) => setTimeout(r, 500)); // subscribed, first relist done
      await eventDriven.events.next(AbortSignal.timeout(10_000)); // the sandbox's ContainerStarted
      while (eventDriven.events.tryTake() !== undefined);
      const probe = await cri.execSync({ containerId: appId, cmd: ['true'], timeout: 10n });
      expect(probe.exitCode).toBe(0);
      const quick = await runContainer('quick', 'exit 0');
      let died: PlegEvent | undefined;
      const deadline = AbortSignal.timeout(10_000);
      while (died === undefined) {
        const e = await eventDriven.events.next(deadline);
        if (e.type === 'ContainerDied' && e.containerId === quick) died = e;
      }
      const { status } = await cri.containerStatus({ containerId: quick });
      // Far inside the 600 s period: the exit made it relist.
      expect(died.at - nsToMs(status?.finishedAt ?? 0n)).toBeLessThan(5_000);
      expect(exits).toContain(quick);
      expect(exits).not.toContain(appId); // the exec'd `true` exited, not the app
      await cri.removeContainer({ containerId: quick });
    } finally {
      ctl.abort();
      await trigger;
      await watching;
      await eventDriven.stop();
    }
  });

  it('a container that exits by itself gives ContainerDied within one relist period', async () => {
    jobId = await runContainer('job', 'sleep 2; exit 3');
    const died = await waitForEvent('ContainerDied', jobId);
    const { status } = await cri.containerStatus({ containerId: jobId });
    expect(status?.exitCode).toBe(3);
    // The relist that reported it started at most one period (plus the
    // relist before it) after the container finished.
    const lagMs = died.at - nsToMs(status?.finishedAt ?? 0n);
    expect(lagMs).toBeLessThanOrEqual(PERIOD_MS + RELIST_SLACK_MS);
    expect(pleg?.podRecords().get(uid)?.containers.find((c) => c.id === jobId)?.state).toBe('exited');
    expect(historyOf(jobId)).toEqual(['ContainerStarted', 'ContainerDied']);
  });

  it('a stopped container gives ContainerDied within one relist period of StopContainer returning', async () => {
    await cri.stopContainer({ containerId: appId, timeout: 10n });
    const stoppedAt = Date.now();
    const died = await waitForEvent('ContainerDied', appId);
    expect(died.receivedAt - stoppedAt).toBeLessThanOrEqual(PERIOD_MS + RELIST_SLACK_MS);
    expect(pleg?.podRecords().get(uid)?.containers.find((c) => c.id === appId)?.state).toBe('exited');
  });

  it('removing exited containers gives ContainerRemoved (no second ContainerDied)', async () => {
    await Promise.all([cri.removeContainer({ containerId: appId }), cri.removeContainer({ containerId: jobId })]);
    await waitForEvent('ContainerRemoved', appId);
    await waitForEvent('ContainerRemoved', jobId);
    expect(historyOf(appId)).toEqual(['ContainerStarted', 'ContainerDied', 'ContainerRemoved']);
    expect(historyOf(jobId)).toEqual(['ContainerStarted', 'ContainerDied', 'ContainerRemoved']);
    expect(pleg?.podRecords().get(uid)?.containers).toEqual([]);
  });

  it('a stopped sandbox gives ContainerDied with its id, its removal ContainerRemoved, and the pod leaves the records', async () => {
    await cri.stopPodSandbox({ podSandboxId: sandboxId });
    await waitForEvent('ContainerDied', sandboxId);
    expect(pleg?.podRecords().get(uid)?.sandboxes[0]?.state).toBe('notready');
    await cri.removePodSandbox({ podSandboxId: sandboxId });
    await waitForEvent('ContainerRemoved', sandboxId);
    expect(historyOf(sandboxId)).toEqual(['ContainerStarted', 'ContainerDied', 'ContainerRemoved']);
    expect(pleg?.podRecords().has(uid)).toBe(false);
    // Nothing was ever said about the unlabelled sandbox, nor about any other pod.
    expect(historyOf(foreignSandboxId)).toEqual([]);
    expect(seen.every((e) => e.podUid === uid)).toBe(true);
    expect(pleg?.lastRelist.error).toBeNull();
    expect(pleg?.healthy().ok).toBe(true);
    expect(pleg?.discardedEvents).toBe(0);
  });

  it('detects that the runtime has no CRI event stream (containerd 1.6), so relisting is the path', async () => {
    const { runtimeVersion } = await cri.version({});
    const supported = await detectEventedSupport(cri, { waitMs: 2000 });
    if (/^v?1\.6\./.test(runtimeVersion)) expect(supported).toBe(false);
    else expect(typeof supported).toBe('boolean');
  });

  it('stop() returns promptly and no relist runs afterwards', async () => {
    const p = pleg as GenericPLEG;
    const t0 = Date.now();
    await p.stop();
    expect(Date.now() - t0).toBeLessThan(PERIOD_MS);
    const last = p.lastRelist;
    await new Promise((r) => setTimeout(r, PERIOD_MS + 200));
    expect(p.lastRelist).toBe(last);
  });
});
