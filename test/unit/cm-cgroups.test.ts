/**
 * The container manager's pure parts: ResourceConfigForPod, the QoS and
 * node allocatable cgroups' settings, pod-level QoS and oom_score_adj, cgroup
 * names, the v1 and v2 files and values, the settings' validation and the
 * hierarchies of /proc/self/mountinfo. Expected values are the kubelet's
 * (pkg/kubelet/cm helpers_linux_test.go cases, runc's conversions).
 */
import { describe, expect, it } from 'vitest';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { cgroupWrites, podCgroup, qosCgroup, sharesToWeight, kubepodsCgroup } from '../../src/lib/cm/cgroup-files.js';
import { parseMountinfo, requiredMounts } from '../../src/lib/cm/manager.js';
import { nodeAllocatableConfig, podRequests, qosCgroupConfigs, resourceConfigForPod } from '../../src/lib/cm/resource-config.js';
import { type CgroupField, cgroupSettings } from '../../src/lib/cm/settings.js';
import { oomScoreAdj, qosClass } from '../../src/lib/kuberuntime/resources.js';

const Mi = 1024 * 1024;
type Res = { requests?: Record<string, string>; limits?: Record<string, string> };

function c(name: string, resources?: Res, restartPolicy?: string): V1Container {
  return { name, image: 'busybox', resources, ...(restartPolicy ? { restartPolicy } : {}) } as V1Container;
}
function pod(containers: V1Container[], extra: { init?: V1Container[]; resources?: Res; overhead?: Record<string, string> } = {}): V1Pod {
  return {
    metadata: { name: 'p', uid: 'u1' },
    spec: { containers, initContainers: extra.init, overhead: extra.overhead, ...(extra.resources ? { resources: extra.resources } : {}) } as V1Pod['spec'],
  };
}

describe('resourceConfigForPod', () => {
  const guaranteed = { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '100m', memory: '100Mi' } };
  const burstableNoLimits = { requests: { cpu: '100m', memory: '100Mi' } };
  const burstableLimits = { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '200Mi' } };
  it.each([
    { name: 'besteffort', p: pod([c('a')]), want: { cpuShares: 2 } },
    { name: 'burstable without limits', p: pod([c('a', burstableNoLimits)]), want: { cpuShares: 102 } },
    { name: 'burstable with limits', p: pod([c('a', burstableLimits)]), want: { cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000, memory: 200 * Mi } },
    {
      name: 'burstable, one container without limits: no quota, no memory limit',
      p: pod([c('a', burstableLimits), c('b', burstableNoLimits)]),
      want: { cpuShares: 204 },
    },
    { name: 'guaranteed', p: pod([c('a', guaranteed)]), want: { cpuShares: 102, cpuQuota: 10000, cpuPeriod: 100000, memory: 100 * Mi } },
    {
      name: 'guaranteed with overhead',
      p: pod([c('a', guaranteed)], { overhead: { cpu: '5m', memory: '5Mi' } }),
      want: { cpuShares: 107, cpuQuota: 10500, cpuPeriod: 100000, memory: 105 * Mi },
    },
    {
      name: 'init container larger than the sum',
      p: pod([c('a', guaranteed)], { init: [c('i', { limits: { cpu: '300m', memory: '300Mi' } })] }),
      want: { cpuShares: 307, cpuQuota: 30000, cpuPeriod: 100000, memory: 300 * Mi },
    },
    {
      name: 'a sidecar adds to the containers',
      p: pod([c('a', guaranteed)], { init: [c('s', guaranteed, 'Always')] }),
      want: { cpuShares: 204, cpuQuota: 20000, cpuPeriod: 100000, memory: 200 * Mi },
    },
    {
      name: 'pod-level memory limit only: burstable, memory limited, no quota',
      p: pod([c('a')], { resources: { limits: { memory: '64Mi' } } }),
      want: { cpuShares: 2, memory: 64 * Mi },
    },
    {
      name: 'pod-level limits and requests (guaranteed), containers without resources',
      p: pod([c('a'), c('b')], { resources: { limits: { cpu: '1', memory: '1Gi' } } }),
      want: { cpuShares: 1024, cpuQuota: 100000, cpuPeriod: 100000, memory: 1024 * Mi },
    },
    {
      name: 'pod-level limits over the containers\' (burstable pod-level requests)',
      p: pod([c('a', burstableLimits)], { resources: { requests: { cpu: '500m' }, limits: { cpu: '1', memory: '512Mi' } } }),
      want: { cpuShares: 512, cpuQuota: 100000, cpuPeriod: 100000, memory: 512 * Mi },
    },
  ])('$name', ({ p, want }) => {
    expect(resourceConfigForPod(p)).toEqual(want);
  });
  it('--cpu-cfs-quota=false leaves the quota at -1; another period', () => {
    const p = pod([c('a', guaranteed)]);
    expect(resourceConfigForPod(p, { enforceCPULimits: false })).toMatchObject({ cpuQuota: -1 });
    expect(resourceConfigForPod(p, { cpuPeriod: 50_000 })).toMatchObject({ cpuQuota: 5000, cpuPeriod: 50_000 });
  });
});

describe('pod requests and QoS', () => {
  it('pod-level requests replace the containers\'; overhead adds', () => {
    expect(podRequests(pod([c('a', { requests: { cpu: '100m', memory: '10Mi' } })], { resources: { requests: { memory: '50Mi' } }, overhead: { cpu: '10m' } }))).toEqual({
      cpu: 110,
      memory: 50 * Mi,
    });
  });
  it.each([
    { name: 'pod-level limits of cpu and memory', res: { limits: { cpu: '1', memory: '1Gi' } }, want: 'Guaranteed' },
    { name: 'pod-level memory limit only', res: { limits: { memory: '1Gi' } }, want: 'Burstable' },
    { name: 'pod-level requests below limits', res: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }, want: 'Burstable' },
    { name: 'pod-level requests only', res: { requests: { cpu: '500m' } }, want: 'Burstable' },
  ])('$name → $want (containers\' resources do not count)', ({ res, want }) => {
    expect(qosClass(pod([c('a', { limits: { cpu: '1', memory: '1Gi' } }), c('b')], { resources: res as Res }))).toBe(want);
  });
  it('QoS cgroups: burstable sums its pods\' cpu requests, besteffort is 2 shares', () => {
    const pods = [
      pod([c('a', { requests: { cpu: '100m' } })]),
      pod([c('a', { requests: { cpu: '250m' } })]),
      pod([c('a', { limits: { cpu: '1', memory: '1Gi' } })]),
      pod([c('a')]),
    ];
    expect(qosCgroupConfigs(pods)).toEqual({ burstable: { cpuShares: 358 }, besteffort: { cpuShares: 2 } });
    expect(qosCgroupConfigs([])).toEqual({ burstable: { cpuShares: 2 }, besteffort: { cpuShares: 2 } });
  });
});

describe('oomScoreAdj (pkg/kubelet/qos/policy.go)', () => {
  const capacity = 4096 * Mi;
  it.each([
    { name: 'guaranteed', p: pod([c('a', { limits: { cpu: '1', memory: '1Gi' } })]), want: -997 },
    { name: 'besteffort', p: pod([c('a')]), want: 1000 },
    { name: 'burstable: 1000 - 1000*request/capacity', p: pod([c('a', { requests: { memory: '1Gi' } })]), want: 750 },
    { name: 'burstable with a tiny request: 999', p: pod([c('a', { requests: { cpu: '1m', memory: '1' } })]), want: 999 },
    { name: 'burstable above capacity: 3', p: pod([c('a', { requests: { memory: '8Gi' } })]), want: 3 },
    {
      name: 'pod-level memory request: what the containers do not request is shared among them',
      p: pod([c('a', { requests: { memory: '512Mi' } }), c('b')], { resources: { requests: { memory: '2Gi' } } }),
      want: 1000 - Math.trunc((1000 * (512 * Mi + 768 * Mi)) / capacity),
    },
  ])('$name', ({ p, want }) => {
    expect(oomScoreAdj(p, p.spec!.containers[0]!, capacity)).toBe(want);
  });
  it('a sidecar is killed no later than the regular container with the smallest request', () => {
    const p = pod([c('a', { requests: { memory: '1Gi' } }), c('b', { requests: { memory: '2Gi' } })], { init: [c('s', { requests: { memory: '100Mi' } }, 'Always')] });
    expect(oomScoreAdj(p, p.spec!.initContainers![0]!, capacity)).toBe(750);
    expect(oomScoreAdj(p, p.spec!.containers[1]!, capacity)).toBe(500);
  });
  it('a node-critical static pod: -997 whatever its QoS class', () => {
    const p = pod([c('a', { requests: { cpu: '250m' } })]);
    p.spec!.priorityClassName = 'system-node-critical';
    expect(oomScoreAdj(p, p.spec!.containers[0]!, capacity)).toBe(999);
    p.metadata!.annotations = { 'kubernetes.io/config.source': 'file' };
    expect(oomScoreAdj(p, p.spec!.containers[0]!, capacity)).toBe(-997);
    p.metadata!.annotations = { 'kubernetes.io/config.source': 'api' };
    p.spec!.priority = 2_000_001_000;
    expect(oomScoreAdj(p, p.spec!.containers[0]!, capacity)).toBe(-997);
  });
});

describe('node allocatable (kubepods)', () => {
  const capacity = { cpuMilli: 4000, memoryBytes: 8192 * Mi, pid: 32768 };
  const kube = { cpuMilli: 100, memoryBytes: 256 * Mi, pid: 1000 };
  const system = { cpuMilli: 500, memoryBytes: 512 * Mi, pid: 0 };
  it('enforced on pods: capacity less the reservations', () => {
    expect(nodeAllocatableConfig(capacity, [kube, system], true)).toEqual({ cpuShares: 3481, memory: 7424 * Mi, pidsLimit: 31768 });
  });
  it('not enforced: the capacity', () => {
    expect(nodeAllocatableConfig(capacity, [kube, system], false)).toEqual({ cpuShares: 4096, memory: 8192 * Mi, pidsLimit: 32768 });
  });
});

describe('cgroup names (cgroupfs driver)', () => {
  it.each([
    ['/', 'Guaranteed', '/kubepods/podu1'],
    ['/', 'Burstable', '/kubepods/burstable/podu1'],
    ['/', 'BestEffort', '/kubepods/besteffort/podu1'],
    ['/klet-test/', 'Burstable', '/klet-test/kubepods/burstable/podu1'],
  ] as const)('root %s, %s → %s', (root, qos, want) => {
    expect(podCgroup(root, qos, 'u1')).toBe(want);
  });
  it('kubepods and QoS cgroups', () => {
    expect(kubepodsCgroup('/')).toBe('/kubepods');
    expect(qosCgroup('/a', 'Guaranteed')).toBe('/a/kubepods');
    expect(qosCgroup('/a', 'BestEffort')).toBe('/a/kubepods/besteffort');
  });
});

describe('cgroup v1 and v2 files', () => {
  const rc = { cpuShares: 1024, cpuQuota: 50000, cpuPeriod: 100000, memory: 64 * Mi, pidsLimit: 100 };
  it('v1', () => {
    expect(cgroupWrites(1, rc)).toEqual([
      { controller: 'cpu', file: 'cpu.shares', value: '1024' },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '50000' },
      { controller: 'memory', file: 'memory.limit_in_bytes', value: String(64 * Mi) },
      { controller: 'pids', file: 'pids.max', value: '100' },
    ]);
    expect(cgroupWrites(1, { cpuShares: 2, cpuQuota: -1, cpuPeriod: 100000 })).toEqual([
      { controller: 'cpu', file: 'cpu.shares', value: '2' },
      { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
      { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '-1' },
    ]);
  });
  it('v2', () => {
    expect(cgroupWrites(2, rc)).toEqual([
      { controller: '', file: 'cpu.weight', value: '39' },
      { controller: '', file: 'cpu.max', value: '50000 100000' },
      { controller: '', file: 'memory.max', value: String(64 * Mi) },
      { controller: '', file: 'pids.max', value: '100' },
    ]);
    expect(cgroupWrites(2, { cpuShares: 2, cpuQuota: -1, cpuPeriod: 100000, pidsLimit: -1 })).toEqual([
      { controller: '', file: 'cpu.weight', value: '1' },
      { controller: '', file: 'cpu.max', value: 'max 100000' },
      { controller: '', file: 'pids.max', value: 'max' },
    ]);
    expect(cgroupWrites(2, {})).toEqual([]);
  });
  it.each([
    [2, 1],
    [1024, 39],
    [102, 4],
    [262144, 10000],
  ])('cpu.shares %i → cpu.weight %i', (shares, weight) => {
    expect(sharesToWeight(shares)).toBe(weight);
  });
});

describe('hierarchies from /proc/self/mountinfo', () => {
  const hybrid = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    '50 35 0:32 /x /sys/fs/cgroup/memory/x ro,relatime - cgroup cgroup rw,memory',
  ].join('\n');
  it('v1 (hybrid): each controller, named hierarchies and the cgroup2 mount; the first mount of a controller wins', () => {
    expect(Object.fromEntries(parseMountinfo(hybrid, 1))).toEqual({
      cpu: '/sys/fs/cgroup/cpu,cpuacct',
      cpuacct: '/sys/fs/cgroup/cpu,cpuacct',
      memory: '/sys/fs/cgroup/memory',
      'name=systemd': '/sys/fs/cgroup/systemd',
      unified: '/sys/fs/cgroup/unified',
    });
  });
  it("the hierarchies a --cgroup-root must exist in are the kubelet's (cgroupManager.Exists): not a hybrid host's cgroup2 mount", () => {
    expect([...requiredMounts({ version: 1, mounts: parseMountinfo(hybrid, 1) })].sort()).toEqual(['/sys/fs/cgroup/cpu,cpuacct', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/systemd']);
    expect([...requiredMounts({ version: 2, mounts: new Map([['', '/sys/fs/cgroup']]) })]).toEqual(['/sys/fs/cgroup']);
  });
  it('v2: the unified mount', () => {
    expect(Object.fromEntries(parseMountinfo('29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate', 2))).toEqual({ '': '/sys/fs/cgroup' });
  });
});

describe('cgroup settings (flags)', () => {
  it('defaults: root /, pods enforced', () => {
    expect(cgroupSettings({ cgroupsPerQOS: true })).toMatchObject({ cgroupRoot: '/', enforcePods: true });
    expect(cgroupSettings({ cgroupsPerQOS: true, enforceNodeAllocatable: ['none'], kubeReserved: 'memory=1Gi' })).toMatchObject({
      enforcePods: false,
      kubeReserved: { memoryBytes: 1024 * Mi },
    });
  });
  it('cgroups-per-qos false: none', () => {
    expect(cgroupSettings({ cgroupsPerQOS: false, enforceNodeAllocatable: ['none'] })).toBeNull();
    expect(cgroupSettings({ cgroupsPerQOS: false, enforceNodeAllocatable: [] })).toBeNull();
  });
  it.each([
    [{ cgroupsPerQOS: true, cgroupDriver: 'upstart' }, 'cgroupDriver upstart: invalid configuration: cgroupDriver (--cgroup-driver) must be cgroupfs or systemd'],
    [{ cgroupsPerQOS: false }, 'cgroupsPerQOS false, enforceNodeAllocatable pods: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods"'],
    [{ cgroupsPerQOS: true, enforceNodeAllocatable: ['pods', 'pods'] }, 'enforceNodeAllocatable pods,pods: invalid configuration: duplicated enforcements "pods"'],
    [{ cgroupsPerQOS: true, enforceNodeAllocatable: ['pods', 'none'] }, 'may not contain additional enforcements when "none"'],
    [{ cgroupsPerQOS: true, enforceNodeAllocatable: ['bogus'] }, 'option "bogus" specified for enforceNodeAllocatable'],
    [{ cgroupsPerQOS: true, enforceNodeAllocatable: ['pods', 'kube-reserved'] }, '"kube-reserved" is not supported by klet yet'],
    [{ cgroupsPerQOS: true, cgroupRoot: 'relative' }, 'cgroupRoot relative: must be an absolute cgroupfs path'],
    [{ cgroupsPerQOS: true, kubeReserved: 'memory=lots' }, 'kubeReserved memory=lots: '],
  ])('%j → %s', (raw, message) => {
    expect(() => cgroupSettings(raw)).toThrow(message);
  });

  it('an error names each value as the caller describes it: its flag, or the file\'s line and field', () => {
    const FLAGS: Record<CgroupField, string> = {
      cgroupsPerQOS: '--cgroups-per-qos',
      cgroupRoot: '--cgroup-root',
      cgroupDriver: '--cgroup-driver',
      enforceNodeAllocatable: '--enforce-node-allocatable',
      kubeReserved: '--kube-reserved',
      systemReserved: '--system-reserved',
    };
    const flag = (f: CgroupField) => FLAGS[f];
    const file = (f: CgroupField) => `/etc/klet/config.yaml:7: ${f}`;
    expect(() => cgroupSettings({ cgroupsPerQOS: true, cgroupRoot: 'relative', describe: flag })).toThrow(/^--cgroup-root relative: must be an absolute cgroupfs path/);
    expect(() => cgroupSettings({ cgroupsPerQOS: true, cgroupRoot: 'relative', describe: file })).toThrow(/^\/etc\/klet\/config\.yaml:7: cgroupRoot relative: must be an absolute cgroupfs path/);
    expect(() => cgroupSettings({ cgroupsPerQOS: true, enforceNodeAllocatable: ['bogus'], describe: file })).toThrow(/^\/etc\/klet\/config\.yaml:7: enforceNodeAllocatable bogus: invalid configuration: option "bogus"/);
    expect(() => cgroupSettings({ cgroupsPerQOS: false, describe: flag })).toThrow(/^--cgroups-per-qos false, --enforce-node-allocatable pods: invalid configuration/);
    expect(() => cgroupSettings({ cgroupsPerQOS: true, systemReserved: 'cpu=x', describe: file })).toThrow(/^\/etc\/klet\/config\.yaml:7: systemReserved cpu=x: /);
    expect(cgroupSettings({ cgroupsPerQOS: true, cgroupRoot: '/klet', describe: file })?.cgroupRootName).toBe('/etc/klet/config.yaml:7: cgroupRoot');
    expect(() => cgroupSettings({ cgroupsPerQOS: true, cgroupDriver: 'upstart', describe: file })).toThrow(/^\/etc\/klet\/config\.yaml:7: cgroupDriver upstart: invalid configuration/);
    expect(cgroupSettings({ cgroupsPerQOS: true, cgroupDriver: 'systemd', describe: flag })).toMatchObject({ driver: 'systemd', driverName: '--cgroup-driver' });
  });
});
