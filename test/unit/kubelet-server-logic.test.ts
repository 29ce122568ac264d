import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { KubeletAuth, apiVerb, certificateUser, forbiddenMessage, requestSubresources, type ReviewApi } from '../../src/lib/server/kubelet-auth.js';
import { metricPathLabel, parseLogQuery, parsePortForwardPorts, parseStreamOptions, routeOf } from '../../src/lib/server/kubelet-routes.js';
import { cleanPath, logContainerId } from '../../src/lib/server/kubelet-server.js';
import { upstreamRequestHead } from '../../src/lib/server/stream-proxy.js';

describe('routeOf', () => {
  it.each([
    ['/healthz', { kind: 'healthz' }],
    ['/pods', { kind: 'pods' }],
    ['/pods/', { kind: 'pods' }],
    ['/configz', { kind: 'configz' }],
    ['/metrics', { kind: 'metrics', which: 'all' }],
    ['/metrics/probes', { kind: 'metrics', which: 'probes' }],
    ['/containerLogs/ns/p/c', { kind: 'containerLogs', namespace: 'ns', pod: 'p', container: 'c' }],
    ['/containerLogs/ns//c', { kind: 'containerLogs', namespace: 'ns', pod: '', container: 'c' }],
    ['/exec/ns/p/c', { kind: 'exec', namespace: 'ns', pod: 'p', container: 'c' }],
    ['/exec/ns/p/uid-1/c', { kind: 'exec', namespace: 'ns', pod: 'p', uid: 'uid-1', container: 'c' }],
    ['/attach/ns/p/c', { kind: 'attach', namespace: 'ns', pod: 'p', container: 'c' }],
    ['/run/ns/p/c', { kind: 'run', namespace: 'ns', pod: 'p', container: 'c' }],
    ['/portForward/ns/p', { kind: 'portForward', namespace: 'ns', pod: 'p' }],
    ['/portForward/ns/p/uid-1', { kind: 'portForward', namespace: 'ns', pod: 'p', uid: 'uid-1' }],
    ['/containerLogs/ns/p%2Fx/c', { kind: 'notFound' }],
    ['/containerLogs/../p/c', { kind: 'notFound' }],
    ['/containerLogs/%2e%2e/p/c', { kind: 'notFound' }],
    ['/exec/ns/p', { kind: 'notFound' }],
    ['/%zz', { kind: 'notFound' }],
    ['/stats/summary', { kind: 'statsSummary' }],
    ['/stats/container', { kind: 'notFound' }],
    ['/', { kind: 'notFound' }],
    ['/logs', { kind: 'logsRoot' }],
    ['/logs/', { kind: 'logs', path: '' }],
    ['/logs/apt/', { kind: 'logs', path: 'apt/' }],
    ['/logs/apt/history.log', { kind: 'logs', path: 'apt/history.log' }],
    ['/logs/a%20b.log', { kind: 'logs', path: 'a b.log' }],
    // Never outside /var/log: no `..`, encoded or not, no encoded slash, no empty segment.
    ['/logs/../etc/shadow', { kind: 'notFound' }],
    ['/logs/%2e%2e/etc/shadow', { kind: 'notFound' }],
    ['/logs/apt/..', { kind: 'notFound' }],
    ['/logs/..%2Fetc%2Fshadow', { kind: 'notFound' }],
    ['/logs//etc/shadow', { kind: 'notFound' }],
  ])('%s', (path, want) => {
    expect(routeOf(path)).toEqual(want);
  });
});

describe('parseLogQuery (v1.PodLogOptions as the kubelet decodes and validates them)', () => {
  const q = (s: string) => parseLogQuery(new URLSearchParams(s));
  it('reads every option', () => {
    expect(q('follow=true&previous=1&timestamps=TRUE&tailLines=5&limitBytes=100&sinceSeconds=30')).toEqual({
      ok: true,
      value: { follow: true, previous: true, timestamps: true, tailLines: 5, limitBytes: 100, sinceSeconds: 30 },
    });
    expect(q('sinceTime=2026-11-27T10:00:00Z')).toEqual({ ok: true, value: { follow: false, previous: false, timestamps: false, sinceTime: new Date('2026-11-27T10:00:00Z') } });
  });
  it('booleans as apimachinery converts them: false and 0 are false, anything else true', () => {
    expect(q('follow=false').ok && q('follow=false')).toMatchObject({ value: { follow: false } });
    expect(q('follow=0')).toMatchObject({ value: { follow: false } });
    expect(q('follow=yes')).toMatchObject({ value: { follow: true } });
    expect(q('follow=')).toMatchObject({ value: { follow: true } });
  });
  it('the legacy tail parameter', () => {
    expect(q('tail=3')).toMatchObject({ value: { tailLines: 3 } });
    expect(q('tail=all&tailLines=3')).toEqual({ ok: true, value: { follow: false, previous: false, timestamps: false } });
  });
  it('undecodable values: 400', () => {
    for (const s of ['tailLines=x', 'tailLines=', 'limitBytes=1.5', 'sinceSeconds=99999999999999999999', 'sinceTime=yesterday']) {
      expect(q(s), s).toEqual({ ok: false, status: 400, message: '{"message": "Unable to decode query."}' });
    }
  });
  it('invalid options: 422', () => {
    for (const s of ['tailLines=-1', 'limitBytes=0', 'sinceSeconds=0', 'sinceSeconds=5&sinceTime=2026-11-27T10:00:00Z']) {
      expect(q(s), s).toEqual({ ok: false, status: 422, message: '{"message": "Invalid request."}' });
    }
  });
  it('a stream other than All: refused as with PodLogsQuerySplitStreams off', () => {
    expect(q('stream=Stdout')).toMatchObject({ ok: false, status: 400 });
    expect(q('stream=All').ok).toBe(true);
  });
});

describe('stream options and port-forward ports', () => {
  it('exec/attach: at least one stream; a TTY has no separate stderr', () => {
    expect(parseStreamOptions(new URLSearchParams('output=1&error=1&tty=1'))).toEqual({ ok: true, value: { stdin: false, stdout: true, stderr: false, tty: true } });
    expect(parseStreamOptions(new URLSearchParams('command=ls'))).toEqual({ ok: false, status: 400, message: 'you must specify at least 1 of stdin, stdout, stderr' });
  });
  it('port-forward: ports required on WebSocket only', () => {
    expect(parsePortForwardPorts(new URLSearchParams(''), false)).toEqual({ ok: true, value: [] });
    expect(parsePortForwardPorts(new URLSearchParams('port=80,443&port=8080'), true)).toEqual({ ok: true, value: [80, 443, 8080] });
    expect(parsePortForwardPorts(new URLSearchParams(''), true)).toMatchObject({ ok: false, message: 'query parameter "port" is required' });
    expect(parsePortForwardPorts(new URLSearchParams('port=0'), true)).toMatchObject({ ok: false, message: 'port "0" must be > 0' });
    expect(parsePortForwardPorts(new URLSearchParams('port=70000'), true)).toMatchObject({ ok: false, status: 400 });
  });
  it('metric path label: the first segment, nothing a client could make unbounded', () => {
    expect(metricPathLabel('/containerLogs/a/b/c')).toBe('containerLogs');
    expect(metricPathLabel('/exec/a/b/c')).toBe('exec');
    expect(metricPathLabel('/metrics/probes')).toBe('metrics/probes');
    expect(metricPathLabel('/metrics/nosuch')).toBe('other');
    expect(metricPathLabel('/nosuch/x')).toBe('other');
    expect(metricPathLabel('/' + 'a'.repeat(40))).toBe('other');
    expect(metricPathLabel('/%2e')).toBe('other');
  });
});

describe('authorization attributes (the kubelet\'s GetRequestAttributes, fine-grained on)', () => {
  it.each([
    ['/pods', ['pods', 'proxy']],
    ['/healthz', ['healthz', 'proxy']],
    ['/configz', ['configz', 'proxy']],
    ['/runningpods/', ['pods', 'proxy']],
    ['/stats/summary', ['stats']],
    ['/metrics', ['metrics']],
    ['/metrics/probes', ['metrics']],
    ['/logs/syslog', ['log']],
    ['/containerLogs/a/b/c', ['proxy']],
    ['/exec/a/b/c', ['proxy']],
    ['/podsx', ['proxy']],
  ])('%s → %j', (path, want) => {
    expect(requestSubresources(path)).toEqual(want);
  });
  it('verbs', () => {
    expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map(apiVerb)).toEqual(['get', 'get', 'create', 'update', 'patch', 'delete', '']);
    expect(forbiddenMessage('u', 'get', ['pods', 'proxy'])).toBe('Forbidden (user=u, verb=get, resource=nodes, subresource(s)=[pods proxy])\n');
  });
  it('a certificate subject: CN is the user, O the groups', () => {
    expect(certificateUser({ CN: 'kube-apiserver-kubelet-client', O: ['system:masters', 'x'] })).toEqual({ name: 'kube-apiserver-kubelet-client', groups: ['system:masters', 'x'] });
    expect(certificateUser({ CN: 'a', O: 'g' })).toEqual({ name: 'a', groups: ['g'] });
    expect(certificateUser({ O: 'g' })).toBeNull();
  });
});

describe('KubeletAuth caches as the kubelet does', () => {
  const fakeReq = (authorization?: string) => ({ headers: authorization ? { authorization } : {}, socket: {} }) as unknown as IncomingMessage;
  function setup(allowed: (sub: string) => boolean) {
    let now = 0;
    const calls = { token: 0, sar: 0 };
    const api: ReviewApi = {
      reviewToken: async (token) => {
        calls.token++;
        return token === 'good' ? { authenticated: true, user: { name: 'alice', groups: ['devs'] } } : { authenticated: false };
      },
      reviewNodeAccess: async (q) => {
        calls.sar++;
        return allowed(q.subresource);
      },
    };
    const auth = new KubeletAuth({ nodeName: 'n1', anonymous: false, tokenReview: { api }, authorization: { mode: 'Webhook', api }, now: () => now });
    return { auth, calls, tick: (ms: number) => (now += ms) };
  }
  const signal = new AbortController().signal;

  it('tokens for 2 minutes, and never the token itself as a key', async () => {
    const { auth, calls, tick } = setup(() => true);
    expect(await auth.authenticate(fakeReq('Bearer good'), signal)).toEqual({ name: 'alice', groups: ['devs'] });
    await auth.authenticate(fakeReq('Bearer good'), signal);
    expect(calls.token).toBe(1);
    tick(2 * 60_000);
    await auth.authenticate(fakeReq('Bearer good'), signal);
    expect(calls.token).toBe(2);
    expect(await auth.authenticate(fakeReq('Bearer bad'), signal)).toBeNull();
    expect(JSON.stringify([...(auth as unknown as { tokens: { entries: Map<string, unknown> } }).tokens.entries.keys()])).not.toContain('good');
  });
  it('the user of a verified client certificate, read once per certificate (by its fingerprint)', async () => {
    const { auth } = setup(() => true);
    let reads = 0;
    const certReq = (fingerprint256: string, subject: { CN?: string; O?: string[] }, authorized = true) =>
      ({
        headers: {},
        socket: {
          authorized,
          getPeerX509Certificate: () => ({ fingerprint256 }),
          getPeerCertificate: () => {
            reads++;
            return { subject };
          },
        },
      }) as unknown as IncomingMessage;
    const apiserver = { CN: 'kube-apiserver-kubelet-client', O: ['kubeadm:cluster-admins'] };
    expect(await auth.authenticate(certReq('AA', apiserver), signal)).toEqual({ name: 'kube-apiserver-kubelet-client', groups: ['kubeadm:cluster-admins'] });
    expect(await auth.authenticate(certReq('AA', apiserver), signal)).toEqual({ name: 'kube-apiserver-kubelet-client', groups: ['kubeadm:cluster-admins'] });
    expect(reads).toBe(1);
    // Another certificate is another user; one without a CN is nobody, also remembered.
    expect(await auth.authenticate(certReq('BB', { CN: 'bob' }), signal)).toEqual({ name: 'bob', groups: [] });
    expect(await auth.authenticate(certReq('CC', {}), signal)).toBeNull();
    expect(await auth.authenticate(certReq('CC', {}), signal)).toBeNull();
    expect(reads).toBe(3);
    // A certificate that did not verify is never taken, cached or not.
    expect(await auth.authenticate(certReq('AA', apiserver, false), signal)).toBeNull();
  });
  it('no credentials: anonymous only when enabled', async () => {
    const { auth } = setup(() => true);
    expect(await auth.authenticate(fakeReq(), signal)).toBeNull();
    const anon = new KubeletAuth({ nodeName: 'n1', anonymous: true, authorization: { mode: 'AlwaysAllow' } });
    expect(await anon.authenticate(fakeReq(), signal)).toEqual({ name: 'system:anonymous', groups: ['system:unauthenticated'] });
  });
  it('allowed decisions for 5 minutes, denied for 30 seconds; the fine-grained subresource first, then proxy', async () => {
    const { auth, calls, tick } = setup((sub) => sub === 'proxy');
    const user = { name: 'alice', groups: ['devs'] };
    expect(await auth.authorize(user, 'GET', '/pods', signal)).toEqual({ allowed: true });
    expect(calls.sar).toBe(2); // pods (denied), then proxy (allowed)
    await auth.authorize(user, 'GET', '/pods', signal);
    expect(calls.sar).toBe(2);
    tick(30_000);
    await auth.authorize(user, 'GET', '/pods', signal);
    expect(calls.sar).toBe(3); // the denial expired, the allowance did not
    tick(5 * 60_000);
    await auth.authorize(user, 'GET', '/pods', signal);
    expect(calls.sar).toBe(5);
    const denied = setup(() => false);
    expect(await denied.auth.authorize(user, 'POST', '/exec/a/b/c', signal)).toEqual({ allowed: false, status: 403, message: 'Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])\n' });
  });
});

describe('logContainerId (the kubelet\'s validateContainerLogStatus)', () => {
  const status = (cs: Record<string, unknown>) => ({ containerStatuses: [{ name: 'c', image: '', imageID: '', ready: false, restartCount: 0, ...cs }] });
  it('running, terminated, previous', () => {
    expect(logContainerId(status({ containerID: 'containerd://abc', state: { running: {} } }), 'p', 'c', false)).toBe('abc');
    expect(logContainerId(status({ state: { terminated: { exitCode: 1, containerID: 'containerd://t1' } } }), 'p', 'c', false)).toBe('t1');
    expect(logContainerId(status({ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } } }), 'p', 'c', false)).toBe('old');
    expect(logContainerId(status({ state: { running: {} }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } } }), 'p', 'c', true)).toBe('old');
  });
  it('the kubelet\'s messages when there is no log', () => {
    expect(() => logContainerId(status({ state: { running: {} } }), 'p', 'c', true)).toThrow('previous terminated container "c" in pod "p" not found');
    expect(() => logContainerId(status({ state: { waiting: { reason: 'ContainerCreating' } } }), 'p', 'c', false)).toThrow('container "c" in pod "p" is waiting to start: ContainerCreating');
    expect(() => logContainerId(status({ state: { waiting: { reason: 'ImagePullBackOff' } } }), 'p', 'c', false)).toThrow('is waiting to start: trying and failing to pull image');
    expect(() => logContainerId(status({ state: { waiting: { reason: 'ErrImagePull' } } }), 'p', 'c', false)).toThrow("is waiting to start: image can't be pulled");
    expect(() => logContainerId(undefined, 'p', 'c', false)).toThrow('container "c" in pod "p" is not available');
  });
});

describe('upstreamRequestHead', () => {
  it('keeps the upgrade headers, drops the caller\'s credentials, names the runtime\'s host', () => {
    const req = {
      method: 'POST',
      url: '/exec/ns/p/c?command=ls&output=1',
      rawHeaders: ['Authorization', 'Bearer secret', 'Connection', 'Upgrade', 'Upgrade', 'SPDY/3.1', 'X-Stream-Protocol-Version', 'v4.channel.k8s.io', 'Host', 'node:10250'],
      headers: {},
      socket: { remoteAddress: '10.0.0.1' },
    } as unknown as IncomingMessage;
    const head = upstreamRequestHead(req, new URL('http://127.0.0.1:4321/exec/TOKEN'));
    expect(head).toBe(
      'POST /exec/TOKEN?command=ls&output=1 HTTP/1.1\r\nHost: 127.0.0.1:4321\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n',
    );
    expect(head).not.toContain('secret');
  });
});

describe('the kubelet\'s boolean flags on klet sync', () => {
  it('a bare --flag is =true; =false and other flags stay; nothing after --', async () => {
    const { normalizeKubeletBools } = await import('../../src/cli/kubelet-bools.js');
    expect(normalizeKubeletBools(['--anonymous-auth=false', '--authentication-token-webhook', '--authorization-mode=Webhook', '--', '--anonymous-auth'])).toEqual([
      '--anonymous-auth=false',
      '--authentication-token-webhook=true',
      '--authorization-mode=Webhook',
      '--',
      '--anonymous-auth',
    ]);
  });
  it('both entries take the bare form', async () => {
    const { parseSyncArgv } = await import('../../src/cli/sync-entry.js');
    expect(parseSyncArgv(['--port', '10250', '--authentication-token-webhook', '--anonymous-auth=false'], {})).toMatchObject({ 'authentication-token-webhook': 'true', 'anonymous-auth': 'false', port: 10250 });
  });
});

describe('cleanPath (Go\'s ServeMux redirect of unclean paths)', () => {
  it.each([
    ['/pods', null],
    ['/pods/', null],
    ['/containerLogs/../../etc/passwd/x', '/etc/passwd/x'],
    ['/containerLogs/%2e%2e/%2E%2E/x', null],
    ['/containerLogs/../x?tailLines=1', '/x?tailLines=1'],
    ['//pods', '/pods'],
    ['/a/./b/', '/a/b/'],
    ['/..', '/'],
  ])('%s → %s', (p, want) => {
    expect(cleanPath(p)).toBe(want);
  });
});
