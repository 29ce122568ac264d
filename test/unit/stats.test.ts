import { describe, expect, it } from 'vitest';
import { routeOf } from '../../src/lib/server/kubelet-routes.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cgroupMemory, nodeMemory, parseKeyValues, parseMeminfo, readCgroupStats } from '../../src/lib/stats/node-stats.js';
import { goFloat, resourceMetricsText } from '../../src/lib/stats/resource-metrics.js';
import { NODE_KEY, PODS_KEY, buildSummary, usageNanoCores, type ContainerSample } from '../../src/lib/stats/summary.js';
import { millicores, topRows, topTable } from '../../src/lib/stats/top.js';

const S = 1_000_000_000n;
const T0 = 1_780_000_000n * S;

function container(id: string, pod: string, name: string, cpuNs: number, ws: number, at = T0 + 10n * S): ContainerSample {
  return {
    id,
    podUid: `uid-${pod}`,
    podName: pod,
    podNamespace: 'default',
    name,
    createdAt: T0,
    cpu: { at, usageCoreNanoSeconds: cpuNs },
    memory: { at, workingSetBytes: ws, usageBytes: ws + 4096, rssBytes: ws - 4096 },
    writableLayer: { at, usedBytes: 8192, inodesUsed: 3 },
  };
}

describe('usageNanoCores: the rate between two readings of a cumulative counter', () => {
  it.each([
    ['half a core over 10 s', { at: T0 + 10n * S, usageCoreNanoSeconds: 5e9 }, { at: T0, usageCoreNanoSeconds: 0 }, 500_000_000],
    ['idle', { at: T0 + S, usageCoreNanoSeconds: 7 }, { at: T0, usageCoreNanoSeconds: 7 }, 0],
    ['no earlier reading', { at: T0, usageCoreNanoSeconds: 1 }, undefined, undefined],
    ['same instant', { at: T0, usageCoreNanoSeconds: 9 }, { at: T0, usageCoreNanoSeconds: 1 }, undefined],
    ['counter went back (a new container)', { at: T0 + S, usageCoreNanoSeconds: 1 }, { at: T0, usageCoreNanoSeconds: 9 }, undefined],
  ])('%s', (_name, now, before, want) => {
    expect(usageNanoCores(now, before)).toBe(want);
  });
});

describe('buildSummary (stats/v1alpha1 JSON)', () => {
  const input = {
    node: { nodeName: 'n1', startTime: '2026-01-01T00:00:00.000Z', fs: { time: 'x', capacityBytes: 100 } },
    nodeCpu: { at: T0 + 10n * S, usageCoreNanoSeconds: 40e9 },
    pods: [
      { uid: 'uid-web', name: 'web', namespace: 'default', createdAt: T0 },
      { uid: 'uid-idle', name: 'idle', namespace: 'default', createdAt: T0 },
    ],
    containers: [container('c2', 'web', 'side', 1e9, 2 << 20), container('c1', 'web', 'app', 3e9, 10 << 20)],
    previous: new Map([
      ['c1', { at: T0, usageCoreNanoSeconds: 1e9 }],
      ['c2', { at: T0, usageCoreNanoSeconds: 0 }],
      [NODE_KEY, { at: T0, usageCoreNanoSeconds: 30e9 }],
    ]),
    imageFs: { time: 'x', capacityBytes: 1000, availableBytes: 600 },
  };

  it('groups containers into their pods by labels, sums the pod, names the rates', () => {
    const s = buildSummary(input);
    expect(s.node.cpu).toEqual({ time: '2026-05-28T20:26:50.000Z', usageNanoCores: 1_000_000_000, usageCoreNanoSeconds: 40e9 });
    expect(s.node.fs).toEqual({ time: 'x', capacityBytes: 100 });
    expect(s.pods.map((p) => p.podRef.name)).toEqual(['idle', 'web']);
    const web = s.pods[1]!;
    expect(web.containers.map((c) => c.name)).toEqual(['app', 'side']);
    expect(web.containers[0]!.cpu).toEqual({ time: '2026-05-28T20:26:50.000Z', usageNanoCores: 200_000_000, usageCoreNanoSeconds: 3e9 });
    expect(web.containers[0]!.rootfs).toEqual({ time: '2026-05-28T20:26:50.000Z', availableBytes: 600, capacityBytes: 1000, usedBytes: 8192, inodesUsed: 3 });
    expect(web.cpu?.usageNanoCores).toBe(300_000_000);
    expect(web.cpu?.usageCoreNanoSeconds).toBe(4e9);
    expect(web.memory?.workingSetBytes).toBe(12 << 20);
    expect(web['ephemeral-storage']?.usedBytes).toBe(16384);
    expect(s.pods[0]!.containers).toEqual([]);
    expect(s.pods[0]!.cpu).toBeUndefined();
  });

  it('only_cpu_and_memory drops the filesystems', () => {
    const s = buildSummary({ ...input, onlyCpuAndMemory: true });
    expect(Object.keys(s.node).sort()).toEqual(['cpu', 'nodeName', 'startTime']);
    expect(s.pods[1]!.containers[0]!.rootfs).toBeUndefined();
    expect(s.pods[1]!['ephemeral-storage']).toBeUndefined();
  });

  it("carries the pods' cgroup as the `pods` system container, with its rate, in both shapes", () => {
    const podsCgroup = { startTime: '2026-01-01T00:00:00.000Z', cpu: { at: T0 + 10n * S, usageCoreNanoSeconds: 12e9 }, memory: { time: 'm', availableBytes: 100, workingSetBytes: 900 } };
    const previous = new Map([...input.previous, [PODS_KEY, { at: T0, usageCoreNanoSeconds: 7e9 }]]);
    for (const onlyCpuAndMemory of [false, true]) {
      const s = buildSummary({ ...input, previous, podsCgroup, onlyCpuAndMemory });
      expect(s.node.systemContainers).toEqual([
        { name: 'pods', startTime: podsCgroup.startTime, cpu: { time: '2026-05-28T20:26:50.000Z', usageNanoCores: 500_000_000, usageCoreNanoSeconds: 12e9 }, memory: podsCgroup.memory },
      ]);
    }
    expect(buildSummary(input).node.systemContainers).toBeUndefined();
  });

  it('a container without an earlier reading has no rate, and neither has its pod', () => {
    const s = buildSummary({ ...input, previous: new Map([['c1', { at: T0, usageCoreNanoSeconds: 1e9 }]]) });
    expect(s.pods[1]!.containers[1]!.cpu?.usageNanoCores).toBeUndefined();
    expect(s.pods[1]!.cpu?.usageNanoCores).toBeUndefined();
    expect(s.node.cpu?.usageNanoCores).toBeUndefined();
  });
});

describe('node figures as cAdvisor reads them', () => {
  const meminfo = parseMeminfo('MemTotal:       16000000 kB\nMemFree:         4000000 kB\nInactive(file):  2000000 kB\nHugePages_Total:       0\n');
  it('parses /proc/meminfo in bytes', () => {
    expect(meminfo.get('MemTotal')).toBe(16_000_000 * 1024);
    expect(meminfo.get('HugePages_Total')).toBe(0);
  });
  it('cgroup v1: working set = root usage - total_inactive_file; available = capacity - working set', () => {
    const stat = parseKeyValues('pgfault 7\npgmajfault 1\ntotal_inactive_file 1000\ntotal_rss 500\ntotal_pgfault 70\ntotal_pgmajfault 10\n');
    const m = nodeMemory(new Date(0), meminfo, { usage: 5000, stat });
    expect(m).toMatchObject({ usageBytes: 5000, workingSetBytes: 4000, availableBytes: 16_000_000 * 1024 - 4000, rssBytes: 500, pageFaults: 7, majorPageFaults: 1 });
  });
  it('cgroup v2 (no memory.current at the root): from /proc/meminfo', () => {
    const m = nodeMemory(new Date(0), meminfo);
    expect(m.usageBytes).toBe(12_000_000 * 1024);
    expect(m.workingSetBytes).toBe(10_000_000 * 1024);
  });
});

describe("a cgroup's figures as cAdvisor reads a container's", () => {
  it('v1: working set = usage - total_inactive_file, RSS total_rss, available = limit - working set; none without a limit', () => {
    const stat = parseKeyValues('pgfault 7\npgmajfault 1\ntotal_inactive_file 1000\ntotal_rss 500\n');
    expect(cgroupMemory(new Date(0), 1, 5000, stat, 10_000)).toEqual({ time: '1970-01-01T00:00:00.000Z', availableBytes: 6000, usageBytes: 5000, workingSetBytes: 4000, rssBytes: 500, pageFaults: 7, majorPageFaults: 1 });
    expect(cgroupMemory(new Date(0), 1, 5000, stat, 9223372036854771712).availableBytes).toBeUndefined();
  });
  it('v2: inactive_file and anon', () => {
    const stat = parseKeyValues('anon 300\ninactive_file 200\npgfault 4\n');
    expect(cgroupMemory(new Date(0), 2, 1000, stat, 4000)).toMatchObject({ availableBytes: 3200, workingSetBytes: 800, rssBytes: 300, pageFaults: 4 });
  });
  it('reads the files of both versions (memory.max "max": no limit)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cg-'));
    try {
      const v1m = path.join(dir, 'memory');
      const v1c = path.join(dir, 'cpuacct');
      const v2 = path.join(dir, 'unified');
      for (const d of [v1m, v1c, v2]) fs.mkdirSync(d);
      fs.writeFileSync(path.join(v1m, 'memory.usage_in_bytes'), '5000\n');
      fs.writeFileSync(path.join(v1m, 'memory.stat'), 'total_inactive_file 1000\ntotal_rss 10\n');
      fs.writeFileSync(path.join(v1m, 'memory.limit_in_bytes'), '8000\n');
      fs.writeFileSync(path.join(v1c, 'cpuacct.usage'), '123456789\n');
      const one = await readCgroupStats({ version: 1, memory: v1m, cpu: v1c });
      expect(one.cpu?.usageCoreNanoSeconds).toBe(123456789);
      expect(one.memory).toMatchObject({ usageBytes: 5000, workingSetBytes: 4000, availableBytes: 4000 });
      fs.writeFileSync(path.join(v2, 'memory.current'), '3000\n');
      fs.writeFileSync(path.join(v2, 'memory.stat'), 'inactive_file 1000\nanon 5\n');
      fs.writeFileSync(path.join(v2, 'memory.max'), 'max\n');
      fs.writeFileSync(path.join(v2, 'cpu.stat'), 'usage_usec 42\nuser_usec 40\n');
      const two = await readCgroupStats({ version: 2, memory: v2, cpu: v2 });
      expect(two.cpu?.usageCoreNanoSeconds).toBe(42_000);
      expect(two.memory).toMatchObject({ usageBytes: 3000, workingSetBytes: 2000 });
      expect(two.memory?.availableBytes).toBeUndefined();
      expect(await readCgroupStats({ version: 1, memory: path.join(dir, 'gone') })).toEqual({});
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('/metrics/resource', () => {
  it.each([
    [0, '0'],
    [12.5, '12.5'],
    [123456, '123456'],
    [1234567, '1.234567e+06'],
    [1_780_000_000.25, '1.78000000025e+09'],
    [0.00001, '1e-05'],
    [0.0002, '0.0002'],
  ])('floats as Go writes them: %d -> %s', (v, want) => {
    expect(goFloat(v)).toBe(want);
  });

  it("the kubelet's names, help, types, label order and timestamps", () => {
    const s = buildSummary({
      node: { nodeName: 'n1', startTime: '2026-01-01T00:00:00.000Z', memory: { time: '2026-01-01T00:00:01.000Z', workingSetBytes: 2e9 } },
      nodeCpu: { at: T0, usageCoreNanoSeconds: 12.5e9 },
      pods: [{ uid: 'u', name: 'web', namespace: 'ns1', createdAt: T0 }],
      containers: [{ ...container('c1', 'web', 'app', 1.5e9, 1 << 20), podUid: 'u', podNamespace: 'ns1' }],
      previous: new Map(),
    });
    const text = resourceMetricsText(s);
    const at = String(Number((T0 + 10n * S) / 1_000_000n));
    expect(text).toBe(
      [
        '# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds',
        '# TYPE container_cpu_usage_seconds_total counter',
        `container_cpu_usage_seconds_total{container="app",namespace="ns1",pod="web"} 1.5 ${at}`,
        '# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes',
        '# TYPE container_memory_working_set_bytes gauge',
        `container_memory_working_set_bytes{container="app",namespace="ns1",pod="web"} 1.048576e+06 ${at}`,
        '# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds',
        '# TYPE container_start_time_seconds gauge',
        'container_start_time_seconds{container="app",namespace="ns1",pod="web"} 1.78e+09',
        '# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds',
        '# TYPE node_cpu_usage_seconds_total counter',
        `node_cpu_usage_seconds_total 12.5 ${String(Number(T0 / 1_000_000n))}`,
        '# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes',
        '# TYPE node_memory_working_set_bytes gauge',
        `node_memory_working_set_bytes 2e+09 ${Date.parse('2026-01-01T00:00:01.000Z')}`,
        '# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds',
        '# TYPE pod_cpu_usage_seconds_total counter',
        `pod_cpu_usage_seconds_total{namespace="ns1",pod="web"} 1.5 ${at}`,
        '# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes',
        '# TYPE pod_memory_working_set_bytes gauge',
        `pod_memory_working_set_bytes{namespace="ns1",pod="web"} 1.048576e+06 ${at}`,
        '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise',
        '# TYPE resource_scrape_error gauge',
        'resource_scrape_error 0',
        '',
      ].join('\n'),
    );
    expect(resourceMetricsText(undefined)).toContain('resource_scrape_error 1');
  });

  it('routes /metrics/resource and /stats/summary as the kubelet does', () => {
    expect(routeOf('/metrics/resource')).toEqual({ kind: 'metrics', which: 'resource' });
    expect(routeOf('/stats/summary')).toEqual({ kind: 'statsSummary' });
    expect(routeOf('/stats/summary/x')).toEqual({ kind: 'notFound' });
    expect(routeOf('/stats')).toEqual({ kind: 'notFound' });
  });
});

describe('klet top rows (kubectl top pod)', () => {
  const s = buildSummary({
    node: { nodeName: 'n1', startTime: 'x' },
    pods: [
      { uid: 'uid-web', name: 'web', namespace: 'default', createdAt: T0 },
      { uid: 'uid-db', name: 'db', namespace: 'prod', createdAt: T0 },
    ],
    containers: [container('c1', 'web', 'app', 3e9, 10 << 20), container('c2', 'web', 'side', 1e9, 2 << 20), { ...container('c3', 'db', 'pg', 0.5e9, 300 << 20), podUid: 'uid-db', podNamespace: 'prod' }],
    previous: new Map([
      ['c1', { at: T0, usageCoreNanoSeconds: 1e9 }],
      ['c2', { at: T0, usageCoreNanoSeconds: 0.99e9 }],
      ['c3', { at: T0, usageCoreNanoSeconds: 0 }],
    ]),
  });
  it('millicores round up as a Quantity does', () => {
    expect(millicores(1)).toBe(1);
    expect(millicores(1_000_000)).toBe(1);
    expect(millicores(1_000_001)).toBe(2);
    expect(millicores(0)).toBe(0);
  });
  it('pods sum their containers; --sort-by memory; --containers', () => {
    expect(topRows(s)).toEqual([
      { namespace: 'default', pod: 'web', cpuMillis: 201, memoryBytes: 12 << 20 },
      { namespace: 'prod', pod: 'db', cpuMillis: 50, memoryBytes: 300 << 20 },
    ]);
    expect(topRows(s, { sortBy: 'memory' }).map((r) => r.pod)).toEqual(['db', 'web']);
    expect(topRows(s, { sortBy: 'cpu' }).map((r) => r.pod)).toEqual(['web', 'db']);
    const t = topTable(topRows(s, { containers: true, podUid: 'uid-web' }), { namespaces: false, containers: true });
    expect(t).toEqual({
      header: ['POD', 'NAME', 'CPU(cores)', 'MEMORY(bytes)'],
      rows: [
        ['web', 'app', '200m', '10Mi'],
        ['web', 'side', '1m', '2Mi'],
      ],
    });
    expect(topTable(topRows(s), { namespaces: true, containers: false }).header).toEqual(['NAMESPACE', 'NAME', 'CPU(cores)', 'MEMORY(bytes)']);
  });
});
