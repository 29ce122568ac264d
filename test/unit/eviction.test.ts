/**
 * The eviction manager (lib/eviction), against the kubelet v1.34's
 * pkg/kubelet/eviction: threshold parsing and its messages, the defaults,
 * the signals read from a Summary, thresholds met with their minimum
 * reclaim, the rankings, the eviction message, admission under pressure,
 * and the manager's rounds (grace periods, the pressure transition period,
 * GC before evicting, one pod per round, critical pods spared).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  EvictionManager,
  admitUnderPressure,
  conditionsOf,
  evictionMessage,
  isCriticalPod,
  observe,
  rankDiskPressure,
  rankFor,
  rankMemoryPressure,
  thresholdsMet,
  type PodUsage,
} from '../../src/lib/eviction/manager.js';
import {
  DEFAULT_EVICTION_HARD,
  effectiveEvictionHard,
  formatAmount,
  formatThreshold,
  parseSignalMap,
  parseThresholdConfig,
  parseThresholdStatement,
  withAllocatableThresholds,
  withContainerFsThresholds,
  type EvictionSettings,
} from '../../src/lib/eviction/thresholds.js';
import { buildKubeletConfig, parseConfigFile } from '../../src/lib/kubeletconfig/index.js';
import type { PodStats, Summary } from '../../src/lib/stats/summary.js';

const settings = (s: Partial<EvictionSettings>): EvictionSettings => ({ evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, ...s });
const errorOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('no error');
};

describe('thresholds (ParseThresholdConfig)', () => {
  it.each([
    [{ evictionHard: { 'foo.available': '1Gi' } }, 'unsupported eviction signal foo.available'],
    [{ evictionHard: { 'nodefs.available': '150%' } }, 'eviction percentage threshold nodefs.available must be <= 100%: 150%'],
    [{ evictionHard: { 'nodefs.available': '-5%' } }, 'eviction percentage threshold nodefs.available must be >= 0%: -5%'],
    [{ evictionHard: { 'nodefs.available': 'x%' } }, 'strconv.ParseFloat: parsing "x": invalid syntax'],
    [{ evictionHard: { 'memory.available': '-1Gi' } }, 'eviction threshold memory.available must be positive: -1Gi'],
    [{ evictionHard: { 'memory.available': '0' } }, 'eviction threshold memory.available must be positive: 0'],
    [{ evictionHard: { 'memory.available': 'lots' } }, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
    [{ evictionSoft: { 'memory.available': '1Gi' } }, 'grace period must be specified for the soft eviction threshold memory.available'],
    [{ evictionSoftGracePeriod: { 'memory.available': 'soon' } }, 'time: invalid duration "soon"'],
    [{ evictionSoftGracePeriod: { 'memory.available': '-1m' } }, 'invalid eviction grace period specified: -1m, must be a positive value'],
    [{ evictionSoftGracePeriod: { 'disk.available': '1m' } }, 'unsupported eviction signal disk.available'],
    [{ evictionMinimumReclaim: { 'memory.available': '-1Mi' } }, 'negative eviction minimum reclaim specified for memory.available'],
    [{ evictionMinimumReclaim: { 'nodefs.available': '0%' } }, 'eviction percentage minimum reclaim nodefs.available must be positive: 0%'],
  ])('%j is refused: %s', (s, message) => {
    expect(errorOf(() => parseThresholdConfig(settings(s)))).toBe(message);
  });

  it('names the setting at fault', () => {
    try {
      parseThresholdConfig(settings({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '1m' }, evictionMinimumReclaim: { 'pid.available': '-1' } }));
    } catch (err) {
      expect((err as { field: string }).field).toBe('evictionMinimumReclaim');
      return;
    }
    throw new Error('no error');
  });

  it('parses hard thresholds, soft ones with their grace period, minimum reclaims; 0% and 100% are ignored', () => {
    const t = parseThresholdConfig(
      settings({
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.available': '0%', 'pid.available': '100%' },
        evictionSoft: { 'memory.available': '1.5Gi' },
        evictionSoftGracePeriod: { 'memory.available': '1m30s' },
        evictionMinimumReclaim: { 'memory.available': '0.5Gi', 'nodefs.available': '5%' },
      }),
    );
    expect(t.map((x) => [x.signal, x.value.quantity?.toString() ?? x.value.percentage, x.gracePeriodMs, x.minReclaim?.quantity?.toString() ?? x.minReclaim?.percentage])).toEqual([
      ['memory.available', '100Mi', 0, '512Mi'],
      // float32, as the kubelet keeps percentages
      ['nodefs.available', Math.fround(0.1), 0, Math.fround(0.05)],
      ['memory.available', '1536Mi', 90_000, '512Mi'],
    ]);
    expect(parseThresholdStatement('nodefs.available', '100%')).toBeNull();
  });

  it("uses the kubelet's Linux defaults when evictionHard is not set; a set one replaces them, unless mergeDefaultEvictionSettings", () => {
    expect(DEFAULT_EVICTION_HARD).toEqual({ 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%', 'imagefs.inodesFree': '5%' });
    expect(effectiveEvictionHard(undefined, false)).toEqual(DEFAULT_EVICTION_HARD);
    expect(effectiveEvictionHard({ 'memory.available': '1Gi' }, false)).toEqual({ 'memory.available': '1Gi' });
    expect(effectiveEvictionHard({ 'memory.available': '1Gi' }, true)).toEqual({ ...DEFAULT_EVICTION_HARD, 'memory.available': '1Gi' });
  });

  it('reads the flags as the kubelet does: k<v (--eviction-hard, --eviction-soft), k=v (the others)', () => {
    expect(parseSignalMap('memory.available<100Mi, nodefs.available<10%', '<')).toEqual({ 'memory.available': '100Mi', 'nodefs.available': '10%' });
    expect(parseSignalMap('memory.available=1m', '=')).toEqual({ 'memory.available': '1m' });
    expect(errorOf(() => parseSignalMap('memory.available=1Gi', '<'))).toBe('malformed pair, expect string<string');
  });

  it('derives containerfs thresholds from nodefs (one filesystem) or imagefs (a dedicated image filesystem)', () => {
    const t = parseThresholdConfig(settings({ evictionHard: { 'nodefs.available': '10%', 'imagefs.available': '15%', 'containerfs.available': '1%' } }));
    const of = (dedicated: boolean) => withContainerFsThresholds(t, dedicated).find((x) => x.signal === 'containerfs.available')?.value.percentage;
    expect(of(false)).toBe(Math.fround(0.1));
    expect(of(true)).toBe(Math.fround(0.15));
  });

  it('prints quantities as the kubelet does (BinarySI bytes, DecimalSI counts; a percentage as truncated bytes)', () => {
    expect(formatAmount(9437184, true)).toBe('9Mi');
    expect(formatAmount(10066329, true)).toBe('10066329');
    expect(formatAmount(1000, true)).toBe('1k');
    expect(formatAmount(5000, false)).toBe('5k');
    const t = parseThresholdStatement('nodefs.available', '10%')!;
    expect(formatThreshold(t.value, 96 * 1024 * 1024)).toBe('10066329');
    expect(formatThreshold(parseThresholdStatement('memory.available', '100Mi')!.value, 0)).toBe('100Mi');
  });
});

describe('the configuration (evictionHard & co., their flags)', () => {
  const FILE = '/var/lib/kubelet/config.yaml';
  const header = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
  const build = (text: string | undefined, given = {}) =>
    buildKubeletConfig({ ...(text !== undefined ? { file: parseConfigFile(text, FILE) } : {}), given, nodeName: 'n', nameOf: (p) => (p === 'evictionHard' ? '--eviction-hard' : undefined) });

  it('takes the fields from the file and the flags over them; the defaults otherwise', () => {
    expect(build(undefined).config).toMatchObject({ evictionHard: DEFAULT_EVICTION_HARD, evictionPressureTransitionPeriod: 300_000, evictionMaxPodGracePeriod: 0, mergeDefaultEvictionSettings: false });
    const text = `${header}evictionHard:\n  memory.available: 200Mi\nevictionSoft:\n  memory.available: 500Mi\nevictionSoftGracePeriod:\n  memory.available: 30s\nevictionPressureTransitionPeriod: 30s\nevictionMaxPodGracePeriod: 20\nmergeDefaultEvictionSettings: true\n`;
    const { config } = build(text);
    expect(config).toMatchObject({ evictionHard: { ...DEFAULT_EVICTION_HARD, 'memory.available': '200Mi' }, evictionSoft: { 'memory.available': '500Mi' }, evictionPressureTransitionPeriod: 30_000, evictionMaxPodGracePeriod: 20 });
    expect(config.evictionThresholds.filter((t) => t.gracePeriodMs === 30_000).map((t) => t.signal)).toEqual(['memory.available']);
    expect(build(text, { evictionHard: 'nodefs.available<20%' }).config.evictionHard).toEqual({ ...DEFAULT_EVICTION_HARD, 'nodefs.available': '20%' });
  });

  it('copies each hard memory.available threshold to allocatableMemory.available when pods are enforced (addAllocatableThresholds)', () => {
    const signals = (given: Record<string, unknown>) => build(undefined, given).config.evictionThresholds.map((t) => `${t.signal}${t.gracePeriodMs ? '~' : ''}`);
    expect(signals({})).toEqual(['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'allocatableMemory.available']);
    expect(signals({ enforceNodeAllocatable: ['none'] })).not.toContain('allocatableMemory.available');
    const soft = parseThresholdConfig(settings({ evictionHard: {}, evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '1m' } }));
    expect(withAllocatableThresholds(soft, ['pods']).map((t) => t.signal)).toEqual(['memory.available']);
  });

  it('names the file:line and field, or the flag, of a bad threshold', () => {
    expect(errorOf(() => build(`${header}evictionHard:\n  nodefs.available: 101%\n`))).toBe(`${FILE}:3: evictionHard is invalid: eviction percentage threshold nodefs.available must be <= 100%: 101%`);
    expect(errorOf(() => build(undefined, { evictionHard: 'disk.free<1Gi' }))).toBe('--eviction-hard is invalid: unsupported eviction signal disk.free');
    expect(errorOf(() => build(`${header}evictionSoft:\n  memory.available: 1Gi\n`))).toBe(`${FILE}:3: evictionSoft is invalid: grace period must be specified for the soft eviction threshold memory.available`);
  });
});

// ---------------------------------------------------------------------------

const MiB = 1024 * 1024;
const now = '2026-01-01T00:00:00.000Z';

function summary(o: { memAvail?: number; memWs?: number; nodeAvail?: number; nodeCap?: number; pods?: PodStats[]; time?: string }): Summary {
  const time = o.time ?? now;
  return {
    node: {
      nodeName: 'n',
      startTime: now,
      memory: { time, availableBytes: o.memAvail ?? 4096 * MiB, workingSetBytes: o.memWs ?? 4096 * MiB },
      fs: { time, availableBytes: o.nodeAvail ?? 50 * MiB, capacityBytes: o.nodeCap ?? 100 * MiB, inodesFree: 1000, inodes: 2000 },
      rlimit: { time, maxpid: 4_194_304, curproc: 300 },
    },
    pods: o.pods ?? [],
  };
}

function pod(name: string, o: { memRequest?: string; storageRequest?: string; priority?: number; source?: string; cpu?: string } = {}): V1Pod {
  const requests: Record<string, string> = {};
  if (o.memRequest) requests.memory = o.memRequest;
  if (o.storageRequest) requests['ephemeral-storage'] = o.storageRequest;
  if (o.cpu) requests.cpu = o.cpu;
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations: { 'kubernetes.io/config.source': o.source ?? 'api' } },
    spec: { ...(o.priority !== undefined ? { priority: o.priority } : {}), containers: [{ name: 'c', image: 'i', resources: { requests } }] },
  };
}

function podStats(name: string, o: { ws?: number; rootfs?: number; logs?: number } = {}): PodStats {
  return {
    podRef: { name, namespace: 'default', uid: `uid-${name}` },
    startTime: now,
    containers: [{ name: 'c', startTime: now, memory: { time: now, workingSetBytes: o.ws ?? 0 }, rootfs: { time: now, usedBytes: o.rootfs ?? 0, inodesUsed: 1 }, logs: { time: now, usedBytes: o.logs ?? 0, inodesUsed: 1 } }],
    memory: { time: now, workingSetBytes: o.ws ?? 0 },
  };
}

const usageOf = (stats: PodStats[], volumes: Record<string, number> = {}) => (p: V1Pod): PodUsage | undefined => {
  const s = stats.find((x) => x.podRef.uid === p.metadata?.uid);
  if (!s) return undefined;
  const v = volumes[p.metadata?.name ?? ''];
  return v === undefined ? { stats: s } : { stats: s, volumes: { usedBytes: v, inodesUsed: 1 } };
};

describe('signals and thresholds met', () => {
  it('reads memory (available + working set = capacity), nodefs, pids from the Summary', () => {
    const o = observe(summary({ memAvail: 50 * MiB, memWs: 950 * MiB }));
    expect(o.get('memory.available')).toMatchObject({ available: 50 * MiB, capacity: 1000 * MiB });
    expect(o.get('nodefs.available')).toMatchObject({ available: 50 * MiB, capacity: 100 * MiB });
    expect(o.get('nodefs.inodesFree')).toMatchObject({ available: 1000, capacity: 2000 });
    expect(o.get('pid.available')).toMatchObject({ available: 4_194_304 - 300 });
    expect(o.has('imagefs.available')).toBe(false);
    expect(o.has('allocatableMemory.available')).toBe(false);
  });

  it("reads allocatable memory from the `pods` system container (kubepods under its limit), as the kubelet", () => {
    const s = summary({});
    s.node.systemContainers = [{ name: 'pods', startTime: now, memory: { time: now, availableBytes: 30 * MiB, workingSetBytes: 470 * MiB } }];
    expect(observe(s).get('allocatableMemory.available')).toMatchObject({ available: 30 * MiB, capacity: 500 * MiB });
    const [hard] = withAllocatableThresholds(parseThresholdConfig(settings({ evictionHard: { 'memory.available': '100Mi' } })), ['pods']).filter((t) => t.signal === 'allocatableMemory.available');
    expect(thresholdsMet([hard!], observe(s), false).map((t) => t.signal)).toEqual(['allocatableMemory.available']);
    expect(conditionsOf([hard!])).toEqual(['MemoryPressure']);
  });

  it('meets a threshold below it; with its minimum reclaim, until available is above both', () => {
    const [t] = parseThresholdConfig(settings({ evictionHard: { 'nodefs.available': '40%' }, evictionMinimumReclaim: { 'nodefs.available': '20Mi' } }));
    const at = (avail: number) => observe(summary({ nodeAvail: avail * MiB }));
    expect(thresholdsMet([t!], at(39), false)).toHaveLength(1);
    expect(thresholdsMet([t!], at(41), false)).toHaveLength(0);
    expect(thresholdsMet([t!], at(41), true)).toHaveLength(1);
    expect(thresholdsMet([t!], at(61), true)).toHaveLength(0);
  });
});

describe('ranking (the kubelet rankers)', () => {
  it('memory: usage above requests first, then lower priority, then the larger usage above requests', () => {
    const pods = [pod('within', { memRequest: '100Mi' }), pod('over-high', { memRequest: '10Mi', priority: 1000 }), pod('over-big', { memRequest: '10Mi' }), pod('over-small')];
    const stats = [podStats('within', { ws: 50 * MiB }), podStats('over-high', { ws: 500 * MiB }), podStats('over-big', { ws: 300 * MiB }), podStats('over-small', { ws: 20 * MiB })];
    expect(rankMemoryPressure(pods, usageOf(stats)).map((p) => p.metadata?.name)).toEqual(['over-big', 'over-small', 'over-high', 'within']);
  });

  it('a pod without stats goes first', () => {
    const pods = [pod('a'), pod('nostats')];
    expect(rankMemoryPressure(pods, usageOf([podStats('a', { ws: MiB })])).map((p) => p.metadata?.name)).toEqual(['nostats', 'a']);
  });

  it('disk: with a dedicated image filesystem nodefs counts logs and local volumes (emptyDirs), not the writable layer', () => {
    const pods = [pod('layer'), pod('emptydir'), pod('requested', { storageRequest: '1Gi' })];
    const stats = [podStats('layer', { rootfs: 80 * MiB }), podStats('emptydir', { logs: MiB }), podStats('requested', { logs: MiB })];
    const usage = usageOf(stats, { emptydir: 60 * MiB, requested: 70 * MiB });
    expect(rankFor('nodefs.available', true)(pods, usage).map((p) => p.metadata?.name)).toEqual(['emptydir', 'layer', 'requested']);
    expect(rankFor('nodefs.available', false)(pods, usage).map((p) => p.metadata?.name)).toEqual(['layer', 'emptydir', 'requested']);
    expect(rankDiskPressure(pods, usage, ['root'], 'ephemeral-storage')[0]?.metadata?.name).toBe('layer');
  });
});

describe('the eviction message (evictionMessage)', () => {
  it('names the resource, the threshold and what was available, and each container over its request', () => {
    const t = parseThresholdConfig(settings({ evictionHard: { 'nodefs.available': '40%' } }));
    const obs = observe(summary({ nodeAvail: 20 * MiB, nodeCap: 96 * MiB }));
    const p = pod('filler', { storageRequest: '1Mi' });
    const s = podStats('filler', { rootfs: 12 * 1024, logs: 4 * MiB });
    expect(evictionMessage('ephemeral-storage', p, { stats: s }, t, obs)).toBe(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 40265319, available: 20Mi. Container c was using 4108Ki, request is 1Mi, has larger consumption of ephemeral-storage. ',
    );
    const m = parseThresholdConfig(settings({ evictionHard: { 'memory.available': '100Mi' } }));
    expect(evictionMessage('memory', pod('hog'), { stats: podStats('hog', { ws: 300 * MiB }) }, m, observe(summary({ memAvail: 90 * MiB })))).toBe(
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. ',
    );
  });
});

describe('admission under pressure and critical pods', () => {
  it('refuses every pod under disk pressure, BestEffort ones under memory pressure alone, never a critical pod', () => {
    const be = pod('be');
    const burstable = pod('b', { cpu: '100m' });
    expect(admitUnderPressure(be, [])).toBeNull();
    expect(admitUnderPressure(burstable, ['DiskPressure'])).toEqual({ reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' });
    expect(admitUnderPressure(burstable, ['MemoryPressure'])).toBeNull();
    expect(admitUnderPressure(be, ['MemoryPressure'])).toEqual({ reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' });
    expect(admitUnderPressure(burstable, ['MemoryPressure', 'DiskPressure'])?.message).toBe('The node had condition: [MemoryPressure DiskPressure]. ');
    const tolerating = { ...be, spec: { ...be.spec!, tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] } };
    expect(admitUnderPressure(tolerating, ['MemoryPressure'])).toBeNull();
    expect(admitUnderPressure(pod('static', { source: 'file' }), ['DiskPressure'])).toBeNull();
    expect(isCriticalPod(pod('static', { source: 'file' }))).toBe(true);
    expect(isCriticalPod(pod('system', { priority: 2_000_000_000 }))).toBe(true);
    expect(isCriticalPod(pod('user', { priority: 1000 }))).toBe(false);
  });
});

describe('EvictionManager rounds', () => {
  function harness(o: { hard?: Record<string, string>; soft?: Record<string, string>; grace?: Record<string, string>; transitionMs?: number; pods: V1Pod[] }) {
    let clock = Date.parse(now);
    let tick = 0;
    const calls: string[] = [];
    const state = { nodeAvail: 20 * MiB, stats: [] as PodStats[], freedByGC: 0 };
    const m = new EvictionManager({
      thresholds: parseThresholdConfig(settings({ evictionHard: o.hard ?? {}, evictionSoft: o.soft ?? {}, evictionSoftGracePeriod: o.grace ?? {} })),
      pressureTransitionPeriodMs: o.transitionMs ?? 60_000,
      maxPodGracePeriodSeconds: 5,
      summary: async () => summary({ nodeAvail: state.nodeAvail, pods: state.stats, time: new Date(Date.parse(now) + tick++ * 1000).toISOString() }),
      dedicatedImageFs: async () => true,
      activePods: () => o.pods,
      podCleanedUp: () => true,
      reclaim: {
        containers: async () => {
          calls.push('container GC');
        },
        images: async () => {
          calls.push('image GC');
          state.nodeAvail += state.freedByGC;
        },
      },
      evict: async (p, message, grace) => {
        calls.push(`evict ${p.metadata?.name} ${grace}s: ${message}`);
      },
      now: () => clock,
    });
    return { m, calls, state, advance: (ms: number) => (clock += ms) };
  }
  const signal = new AbortController().signal;

  it('a hard nodefs threshold: DiskPressure, the largest emptyDir user evicted (1 s grace), one per round, critical pods spared', async () => {
    const pods = [pod('static', { source: 'file' }), pod('small'), pod('big')];
    const h = harness({ hard: { 'nodefs.available': '40%' }, pods });
    h.state.stats = [podStats('static', { logs: 90 * MiB }), podStats('small', { logs: MiB }), podStats('big', { logs: 30 * MiB })];
    const evicted = await h.m.synchronize(signal);
    expect(evicted.map((p) => p.metadata?.name)).toEqual(['big']);
    expect(h.m.conditions()).toEqual(['DiskPressure']);
    // nodefs with a dedicated image filesystem has nothing to reclaim first.
    expect(h.calls).toEqual(['evict big 1s: The node was low on resource: ephemeral-storage. Threshold quantity: 40Mi, available: 20Mi. Container c was using 30Mi, request is 0, has larger consumption of ephemeral-storage. ']);
  });

  it('the condition stays for the transition period after the threshold is no longer met, then clears', async () => {
    const h = harness({ hard: { 'nodefs.available': '40%' }, transitionMs: 30_000, pods: [] });
    await h.m.synchronize(signal);
    expect(h.m.conditions()).toEqual(['DiskPressure']);
    h.state.nodeAvail = 90 * MiB;
    h.advance(10_000);
    await h.m.synchronize(signal);
    expect(h.m.conditions()).toEqual(['DiskPressure']);
    h.advance(25_000);
    await h.m.synchronize(signal);
    expect(h.m.conditions()).toEqual([]);
  });

  it('a soft threshold acts only once met for its grace period, with the capped grace period of the pod', async () => {
    const p = pod('hog');
    p.spec!.terminationGracePeriodSeconds = 30;
    const h = harness({ soft: { 'nodefs.available': '40%' }, grace: { 'nodefs.available': '1m' }, pods: [p] });
    h.state.stats = [podStats('hog', { logs: 10 * MiB })];
    expect(await h.m.synchronize(signal)).toEqual([]);
    expect(h.m.conditions()).toEqual(['DiskPressure']);
    h.advance(61_000);
    expect((await h.m.synchronize(signal)).map((x) => x.metadata?.name)).toEqual(['hog']);
    expect(h.calls[0]).toMatch(/^evict hog 5s: /);
  });

  it("reads the node's figures every round and the pods' only when it must rank them", async () => {
    const reads = { node: 0, full: 0 };
    let avail = 90 * MiB;
    const m = new EvictionManager({
      thresholds: parseThresholdConfig(settings({ evictionHard: { 'nodefs.available': '40%' } })),
      pressureTransitionPeriodMs: 1000,
      maxPodGracePeriodSeconds: 0,
      nodeSummary: async () => (reads.node++, summary({ nodeAvail: avail, time: new Date(Date.parse(now) + reads.node * 1000).toISOString() })),
      summary: async () => (reads.full++, summary({ nodeAvail: avail, pods: [podStats('a', { logs: MiB })] })),
      dedicatedImageFs: async () => true,
      activePods: () => [pod('a')],
      podCleanedUp: () => true,
      reclaim: { containers: async () => undefined, images: async () => undefined },
      evict: async () => undefined,
    });
    await m.synchronize(signal);
    await m.synchronize(signal);
    expect(reads).toEqual({ node: 2, full: 0 });
    avail = 10 * MiB;
    expect((await m.synchronize(signal)).map((p) => p.metadata?.name)).toEqual(['a']);
    expect(reads).toEqual({ node: 3, full: 1 });
  });

  it('a hard threshold crossed between rounds starts the next round at once (the quick look); one already acted on does not', async () => {
    let avail = 90 * MiB;
    const evicted: string[] = [];
    let rounds = 0;
    let critical = false;
    const figures = () => summary({ nodeAvail: avail, time: new Date().toISOString(), pods: [podStats('a', { logs: MiB })] });
    const m = new EvictionManager({
      thresholds: parseThresholdConfig(settings({ evictionHard: { 'nodefs.available': '40%' } })),
      pressureTransitionPeriodMs: 1000,
      maxPodGracePeriodSeconds: 0,
      nodeSummary: async () => (rounds++, figures()),
      quickSummary: async () => figures(),
      quickLookMs: 20,
      summary: async () => figures(),
      dedicatedImageFs: async () => true,
      activePods: () => [pod('a', critical ? { source: 'file' } : {})],
      podCleanedUp: () => true,
      reclaim: { containers: async () => undefined, images: async () => undefined },
      evict: async (p) => {
        evicted.push(p.metadata?.name ?? '');
        // What is left active cannot be evicted: the pressure stays.
        critical = true;
      },
    });
    const ac = new AbortController();
    const running = m.run(ac.signal, 60_000);
    try {
      await new Promise((r) => setTimeout(r, 100));
      expect(rounds).toBe(1);
      avail = 10 * MiB;
      const t0 = Date.now();
      while (evicted.length === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 10));
      // Without the quick look the next round would be 60 s away.
      expect(evicted).toEqual(['a']);
      // Still under the threshold with nothing left to evict (a critical pod): the quick look does not spin rounds.
      await new Promise((r) => setTimeout(r, 300));
      const after = rounds;
      await new Promise((r) => setTimeout(r, 300));
      expect(rounds).toBe(after);
    } finally {
      ac.abort();
      await running;
    }
  });

  it('imagefs (or one shared filesystem): container GC and image GC first; no eviction when they free enough', async () => {
    const h = harness({ hard: { 'nodefs.available': '40%' }, pods: [pod('a')] });
    const m2 = new EvictionManager({ ...(h.m as unknown as { opts: ConstructorParameters<typeof EvictionManager>[0] }).opts, dedicatedImageFs: async () => false });
    h.state.freedByGC = 60 * MiB;
    h.state.stats = [podStats('a', { logs: MiB })];
    expect(await m2.synchronize(signal)).toEqual([]);
    expect(h.calls).toEqual(['container GC', 'image GC']);
  });
});
