import { describe, expect, it } from 'vitest';
// @ts-expect-error -- plain JS module of the benchmark harness, no types
import { auditState, cgroupDirs, leaks, notCurrent, openByKey, perMinute, requestKey, tallyAudit, total } from '../../bench/cluster.js';

type Ev = Record<string, unknown>;
const NODE = 'system:node:kbench';
const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 22, 0, s)).toISOString();
const ev = (auditID: string, stage: string, verb: string, resource: string, s: number, o: Ev = {}): Ev => ({
  auditID,
  stage,
  verb,
  objectRef: { resource, ...(o.subresource ? { subresource: o.subresource } : {}) },
  requestURI: `/api/v1/${resource}`,
  user: { username: (o.user as string) ?? NODE },
  requestReceivedTimestamp: at(s),
});
const tally = tallyAudit as (events: Ev[], user: string, state: { open: Map<string, string> }, w?: { from?: number; to?: number }) => Record<string, number>;

describe('bench cluster helpers: the agent requests in the audit log', () => {
  it('names a request by verb and resource/subresource, or by its URI when it names no object', () => {
    expect(requestKey(ev('a', 'ResponseComplete', 'patch', 'pods', 0, { subresource: 'status' }))).toBe('patch pods/status');
    expect(requestKey({ verb: 'get', requestURI: '/version' })).toBe('get /version');
  });

  it("counts the node's requests once each: a watch when it starts (and keeps it open until it completes), others when they complete", () => {
    const state = auditState();
    const counts = tally(
      [
        ev('w1', 'ResponseStarted', 'watch', 'configmaps', 1),
        ev('g1', 'ResponseComplete', 'get', 'nodes', 2),
        ev('p1', 'ResponseComplete', 'patch', 'pods', 3, { subresource: 'status' }),
        ev('x1', 'ResponseComplete', 'list', 'pods', 3, { user: 'admin' }),
        ev('w2', 'ResponseStarted', 'watch', 'pods', 4),
        ev('w1', 'ResponseComplete', 'watch', 'configmaps', 5),
        ev('r1', 'RequestReceived', 'get', 'pods', 5),
      ],
      NODE,
      state,
    );
    expect(counts).toEqual({ 'watch configmaps': 1, 'get nodes': 1, 'patch pods/status': 1, 'watch pods': 1 });
    expect(openByKey(state)).toEqual({ 'watch pods': 1 });
    // A watch refused before it started streams nothing: one ResponseComplete, counted, never open.
    expect(tally([ev('w3', 'ResponseComplete', 'watch', 'secrets', 6)], NODE, state)).toEqual({ 'watch secrets': 1 });
    expect(total(openByKey(state))).toBe(1);
  });

  it('counts only requests received in the window, but follows every watch', () => {
    const state = auditState();
    const from = Date.parse(at(10));
    const to = Date.parse(at(20));
    const counts = tally(
      [ev('w1', 'ResponseStarted', 'watch', 'pods', 5), ev('g1', 'ResponseComplete', 'get', 'pods', 10), ev('g2', 'ResponseComplete', 'get', 'pods', 19), ev('g3', 'ResponseComplete', 'get', 'pods', 20), ev('w2', 'ResponseStarted', 'watch', 'secrets', 25)],
      NODE,
      state,
      { from, to },
    );
    expect(counts).toEqual({ 'get pods': 2 });
    expect(openByKey(state)).toEqual({ 'watch pods': 1, 'watch secrets': 1 });
    // The watch started before the window ends inside it: not a new request.
    expect(tally([ev('w1', 'ResponseComplete', 'watch', 'pods', 5)], NODE, state, { from, to })).toEqual({});
  });

  it('scales counts to per minute, keys sorted', () => {
    expect(perMinute({ 'watch pods': 3, 'get nodes': 10 }, 120)).toEqual({ 'get nodes': 5, 'watch pods': 1.5 });
    expect(Object.keys(perMinute({ b: 1, a: 1 }, 60))).toEqual(['a', 'b']);
  });
});

describe('bench cluster helpers: cgroups, statuses, leaks', () => {
  it("maps /proc/PID/cgroup to the cgroup dirs, v1 hierarchies, named ones and v2's, without the root", () => {
    const text = '12:memory:/k8s.io/abc\n11:cpu,cpuacct:/k8s.io/abc\n1:name=systemd:/k8s.io/abc\n0::/k8s.io/abc\n5:freezer:/\n';
    expect(cgroupDirs(text, '/sys/fs/cgroup', 'unified')).toEqual([
      '/sys/fs/cgroup/memory/k8s.io/abc',
      '/sys/fs/cgroup/cpu,cpuacct/k8s.io/abc',
      '/sys/fs/cgroup/systemd/k8s.io/abc',
      '/sys/fs/cgroup/unified/k8s.io/abc',
    ]);
    expect(cgroupDirs('0::/kubepods/pod1/c1\n', '/sys/fs/cgroup', '')).toEqual(['/sys/fs/cgroup/kubepods/pod1/c1']);
  });

  it("a pod's status is current when the server has it Ready with the runtime's running app container", () => {
    const pod = (name: string, id: string, o: { ready?: boolean; running?: boolean } = {}) => ({
      metadata: { name },
      status: {
        conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
        containerStatuses: [{ name: 'app', ready: o.ready !== false, containerID: `containerd://${id}`, state: o.running === false ? { terminated: {} } : { running: {} } }],
      },
    });
    const expected = { a: 'c1', b: 'c2', c: 'c3', d: 'c4', e: null };
    const server = [pod('a', 'c1'), pod('b', 'old'), pod('c', 'c3', { ready: false }), pod('e', 'c9')];
    expect(notCurrent(server, expected)).toEqual(['b', 'c', 'd', 'e']);
    expect(notCurrent([pod('a', 'c1'), pod('b', 'c2')], { a: 'c1', b: 'c2' })).toEqual([]);
    expect(notCurrent([pod('a', 'c1', { running: false })], { a: 'c1' })).toEqual(['a']);
  });

  it('leaks are what is left over the baseline, never negative; figures without a baseline count whole', () => {
    expect(leaks({ fds: 20, sockets: 8, watches: 12 }, { fds: 22, sockets: 7, watches: 12, sandboxes: 1, cgroups: 0 })).toEqual({ fds: 2, sockets: 0, watches: 0, sandboxes: 1, cgroups: 0 });
  });
});
