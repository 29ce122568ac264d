import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { V1ObjectMeta, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import {
  canonicalIP,
  DEFAULT_DNS_SETTINGS,
  invalidClusterDNS,
  parseResolvConf,
  podDNSConfig,
  podHostnameAndDomain,
  readResolvConf,
  ResolvConfError,
  resolvConfLimitWarning,
  sandboxHostname,
  type DnsSettings,
  type ResolvConf,
} from '../../src/lib/pod/dns.js';
import { managedHostsContent, nodeHostsContent } from '../../src/lib/pod/hosts.js';

const host: ResolvConf = { servers: ['10.0.0.2', '10.0.0.3'], searches: ['corp.example.com', 'lab.example.com'], options: ['ndots:2', 'edns0'] };
const cluster: DnsSettings = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: '/etc/resolv.conf' };
const noClusterDNS: DnsSettings = { ...cluster, clusterDNS: [] };
const CLUSTER_SEARCH = ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local'];

function mkPod(spec: Partial<V1PodSpec> = {}, meta: Partial<V1ObjectMeta> = {}): V1Pod {
  return { metadata: { name: 'web', namespace: 'shop', uid: 'uid-1', ...meta }, spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec } };
}

describe('parseResolvConf (the kubelet table)', () => {
  it.each([
    ['', [], [], []],
    [' \n\t\n', [], [], []],
    [' #comment\n#nameserver 9.9.9.9', [], [], []],
    ['#comment\nnameserver 1.2.3.4\nsearch', ['1.2.3.4'], [], []],
    ['nameserver \t 1.2.3.4\nnameserver 5.6.7.8', ['1.2.3.4', '5.6.7.8'], [], []],
    ['nameserver 1.2.3.4 #comment', ['1.2.3.4'], [], []],
    ['search .', [], [], []],
    ['search foo .  bar', [], ['foo', 'bar'], []],
    ['search foo. bar', [], ['foo', 'bar'], []],
    ['search foo\nsearch bar', [], ['bar'], []],
    ['domain example.org\ncomment', [], [], []],
    ['options ndots:1 ndots:5 attempts:2', [], [], ['ndots:5', 'attempts:2']],
    ['options ndots:1 timeout:3 timeout:1 attempts:3\noptions ndots:5', [], [], ['ndots:5', 'timeout:1', 'attempts:3']],
  ])('%j', (text, servers, searches, options) => {
    const { config, errors } = parseResolvConf(text);
    expect(errors).toEqual([]);
    expect(config.servers).toEqual(servers);
    expect(config.searches).toEqual(searches);
    expect([...config.options].sort()).toEqual([...options].sort());
  });

  it('refuses a nameserver line without an address, with the kubelet\'s error', () => {
    expect(parseResolvConf('#comment\nnameserver\nsearch').errors).toEqual(['nameserver list is empty ']);
  });
});

describe('readResolvConf', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-dns-'));
  it('reads the file at each call; "" is none', async () => {
    const file = path.join(dir, 'resolv.conf');
    fs.writeFileSync(file, 'nameserver 1.1.1.1\nsearch a.example\n');
    expect(await readResolvConf(file)).toEqual({ servers: ['1.1.1.1'], searches: ['a.example'], options: [] });
    fs.writeFileSync(file, 'nameserver 8.8.8.8\n');
    expect((await readResolvConf(file)).servers).toEqual(['8.8.8.8']);
    expect(await readResolvConf('')).toEqual({ servers: [], searches: [], options: [] });
  });

  it('fails with the kubelet\'s words: Go\'s open error, the parse error wrapped', async () => {
    const missing = path.join(dir, 'missing.conf');
    await expect(readResolvConf(missing)).rejects.toThrow(ResolvConfError);
    await expect(readResolvConf(missing)).rejects.toThrow(`open ${missing}: no such file or directory`);
    const bad = path.join(dir, 'bad.conf');
    fs.writeFileSync(bad, 'nameserver\n');
    const err = (await readResolvConf(bad).then(
      () => undefined,
      (e: unknown) => e,
    )) as ResolvConfError;
    expect(err).toBeInstanceOf(ResolvConfError);
    expect(err.message).toBe('Encountered error while parsing resolv conf file. Error: nameserver list is empty ');
    expect(err.detail).toBe('nameserver list is empty ');
  });
});

describe('podDNSConfig', () => {
  const cases: { name: string; spec?: Partial<V1PodSpec>; settings: DnsSettings; want: ResolvConf }[] = [
    { name: 'ClusterFirst (the default): cluster DNS, cluster search before the host\'s, ndots:5', settings: cluster, want: { servers: ['10.96.0.10'], searches: [...CLUSTER_SEARCH, ...host.searches], options: ['ndots:5'] } },
    { name: 'ClusterFirst without a cluster domain: the host\'s search', spec: { dnsPolicy: 'ClusterFirst' }, settings: { ...cluster, clusterDomain: '' }, want: { servers: ['10.96.0.10'], searches: host.searches, options: ['ndots:5'] } },
    { name: 'ClusterFirst on the host network: Default', spec: { dnsPolicy: 'ClusterFirst', hostNetwork: true }, settings: cluster, want: host },
    { name: 'ClusterFirstWithHostNet on the host network: cluster DNS', spec: { dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }, settings: cluster, want: { servers: ['10.96.0.10'], searches: [...CLUSTER_SEARCH, ...host.searches], options: ['ndots:5'] } },
    { name: 'Default: the host\'s', spec: { dnsPolicy: 'Default' }, settings: cluster, want: host },
    { name: 'None: the pod\'s dnsConfig alone', spec: { dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: ['x.example'], options: [{ name: 'ndots', value: '2' }] } }, settings: cluster, want: { servers: ['1.1.1.1'], searches: ['x.example'], options: ['ndots:2'] } },
    { name: 'ClusterFirst without cluster DNS: Default', settings: noClusterDNS, want: host },
    { name: 'Default without a resolver file: loopback, search "."', spec: { dnsPolicy: 'Default' }, settings: { ...cluster, resolvConf: '' }, want: { servers: ['127.0.0.1'], searches: ['.'], options: [] } },
  ];
  it.each(cases)('$name', ({ spec, settings, want }) => {
    const h = settings.resolvConf === '' ? { servers: [], searches: [], options: [] } : host;
    expect(podDNSConfig(mkPod(spec), h, settings).config).toEqual(want);
  });

  it('merges the pod\'s dnsConfig as the kubelet: servers and searches appended without duplicates, options by name', () => {
    const pod = mkPod({
      dnsConfig: { nameservers: ['10.96.0.10', '1.1.1.1'], searches: ['svc.cluster.local', 'x.example'], options: [{ name: 'ndots', value: '1' }, { name: 'edns0' }, { name: 'timeout', value: '' }] },
    });
    expect(podDNSConfig(pod, host, cluster)).toEqual({
      config: { servers: ['10.96.0.10', '1.1.1.1'], searches: [...CLUSTER_SEARCH, ...host.searches, 'x.example'], options: ['ndots:1', 'edns0', 'timeout'] },
      warnings: [],
    });
  });

  it('ClusterFirst without cluster DNS: MissingClusterDNS about the node and the pod (format.Pod)', () => {
    const msg = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
    expect(podDNSConfig(mkPod(), host, noClusterDNS).warnings).toEqual([
      { object: 'node', reason: 'MissingClusterDNS', message: msg },
      { object: 'pod', reason: 'MissingClusterDNS', message: `pod: "web_shop(uid-1)". ${msg}` },
    ]);
    // Not for a host-network ClusterFirst pod (it is Default) nor Default.
    expect(podDNSConfig(mkPod({ hostNetwork: true }), host, noClusterDNS).warnings).toEqual([]);
    expect(podDNSConfig(mkPod({ dnsPolicy: 'Default' }), host, noClusterDNS).warnings).toEqual([]);
  });

  it('without a resolver file, one loopback nameserver per node IP family', () => {
    const s = { ...noClusterDNS, resolvConf: '' };
    const empty = { servers: [], searches: [], options: [] };
    expect(podDNSConfig(mkPod({ dnsPolicy: 'Default' }), empty, s, ['10.0.0.5', 'fd00::5']).config.servers).toEqual(['127.0.0.1', '::1']);
    // ClusterFirst falls back there too.
    expect(podDNSConfig(mkPod(), empty, s).config).toEqual({ servers: ['127.0.0.1'], searches: ['.'], options: [] });
  });

  it('keeps 3 nameservers, with DNSConfigForming', () => {
    const pod = mkPod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '1.0.0.1', '8.8.8.8', '8.8.4.4'] } });
    expect(podDNSConfig(pod, host, cluster)).toEqual({
      config: { servers: ['1.1.1.1', '1.0.0.1', '8.8.8.8'], searches: [], options: [] },
      warnings: [
        {
          object: 'pod',
          reason: 'DNSConfigForming',
          message: 'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 1.1.1.1 1.0.0.1 8.8.8.8',
        },
      ],
    });
  });

  const LINE_2048 = ['A'.repeat(128), ...Array.from({ length: 15 }, (_, i) => String.fromCharCode(66 + i).repeat(127))];
  it.each([
    { name: '32 search paths fit', searches: Array.from({ length: 29 }, (_, i) => `d${i}`), cut: undefined },
    { name: '33 are cut to 32', searches: Array.from({ length: 30 }, (_, i) => `d${i}`), cut: [...CLUSTER_SEARCH, ...Array.from({ length: 29 }, (_, i) => `d${i}`)] },
    { name: 'a path over 253 characters is left out', searches: ['aaa', 'b'.repeat(254), 'bbb'], cut: [...CLUSTER_SEARCH, 'aaa', 'bbb'] },
  ])('search limits: $name', ({ searches, cut }) => {
    const { config, warnings } = podDNSConfig(mkPod(), { ...host, searches }, cluster);
    if (cut === undefined) {
      expect(config.searches).toEqual([...CLUSTER_SEARCH, ...searches]);
      expect(warnings).toEqual([]);
    } else {
      expect(config.searches).toEqual(cut);
      expect(warnings).toEqual([
        { object: 'pod', reason: 'DNSConfigForming', message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${cut.join(' ')}` },
      ]);
    }
  });

  it('search limits: a line of 2048 characters fits, one more domain is cut from the end', () => {
    const pod = mkPod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: LINE_2048 } });
    expect(podDNSConfig(pod, host, cluster).config.searches).toEqual(LINE_2048);
    const over = mkPod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: [...LINE_2048, 'B'] } });
    const r = podDNSConfig(over, host, cluster);
    expect(r.config.searches).toEqual(LINE_2048);
    expect(r.warnings.map((w) => w.reason)).toEqual(['DNSConfigForming']);
  });

  it('prints cluster DNS IPs as Go does', () => {
    expect(podDNSConfig(mkPod(), host, { ...cluster, clusterDNS: ['FD00:0:0::000A', '::ffff:10.96.0.10'] }).config.servers).toEqual(['fd00::a', '10.96.0.10']);
    expect(canonicalIP('10.96.0.10')).toBe('10.96.0.10');
    expect(invalidClusterDNS(['10.96.0.10', 'fd00::a', 'kube-dns', '10.96.0'])).toEqual(['kube-dns', '10.96.0']);
  });
});

describe('resolvConfLimitWarning (CheckLimitsForResolvConf)', () => {
  const f = '/etc/resolv.conf';
  it.each([
    { name: '29 domains with a cluster domain fit', searches: Array.from({ length: 29 }, (_, i) => `d${i}`), domain: 'cluster.local', want: null },
    { name: '30 with a cluster domain do not', searches: Array.from({ length: 30 }, (_, i) => `d${i}`), domain: 'cluster.local', want: "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!" },
    { name: '32 without one fit', searches: Array.from({ length: 32 }, (_, i) => `d${i}`), domain: '', want: null },
    { name: 'a path over 253', searches: ['a'.repeat(254)], domain: '', want: 'Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!' },
    { name: 'a line over 2048', searches: Array.from({ length: 9 }, () => 'a'.repeat(250)), domain: '', want: "Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!" },
  ])('$name', ({ searches, domain, want }) => {
    expect(resolvConfLimitWarning(f, { servers: [], searches, options: [] }, domain)).toBe(want);
  });
});

describe('hostname and domain', () => {
  it.each([
    { name: 'the pod name', pod: mkPod(), domain: 'cluster.local', want: { hostname: 'web', domain: '' } },
    { name: 'spec.hostname', pod: mkPod({ hostname: 'box' }), domain: 'cluster.local', want: { hostname: 'box', domain: '' } },
    { name: 'a subdomain', pod: mkPod({ hostname: 'box', subdomain: 'db' }), domain: 'cluster.local', want: { hostname: 'box', domain: 'db.shop.svc.cluster.local' } },
    { name: 'a subdomain without a cluster domain (the kubelet\'s trailing dot)', pod: mkPod({ subdomain: 'db' }), domain: '', want: { hostname: 'web', domain: 'db.shop.svc.' } },
    { name: 'a long name, cut to 63', pod: mkPod({}, { name: 'a'.repeat(70) }), domain: '', want: { hostname: 'a'.repeat(63), domain: '' } },
    { name: 'a cut ending in - or .', pod: mkPod({}, { name: `${'b'.repeat(61)}-.x` }), domain: '', want: { hostname: 'b'.repeat(61), domain: '' } },
  ])('$name', ({ pod, domain, want }) => {
    expect(podHostnameAndDomain(pod, domain)).toEqual(want);
  });

  it('refuses a hostname or subdomain that is not a DNS label (a static pod skips the API server)', () => {
    expect(() => podHostnameAndDomain(mkPod({ hostname: 'Bad_Name' }), '')).toThrow(/^pod Hostname "Bad_Name" is not a valid DNS label: /);
    expect(() => podHostnameAndDomain(mkPod({ subdomain: 'a.b' }), '')).toThrow(/^pod Subdomain "a.b" is not a valid DNS label: /);
  });

  it('the sandbox hostname: none on the host network, the FQDN with setHostnameAsFQDN (at most 64)', () => {
    expect(sandboxHostname(mkPod({ hostNetwork: true, hostname: 'box' }), 'cluster.local')).toBe('');
    expect(sandboxHostname(mkPod({ subdomain: 'db' }), 'cluster.local')).toBe('web');
    expect(sandboxHostname(mkPod({ subdomain: 'db', setHostnameAsFQDN: true }), 'cluster.local')).toBe('web.db.shop.svc.cluster.local');
    expect(sandboxHostname(mkPod({ setHostnameAsFQDN: true }), 'cluster.local')).toBe('web');
    expect(() => sandboxHostname(mkPod({ hostname: 'h'.repeat(40), subdomain: 'db', setHostnameAsFQDN: true }), 'cluster.local')).toThrow(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${'h'.repeat(40)}.db.shop.svc.cluster.local is too long (64 characters is the max, 66 characters requested)`,
    );
  });
});

describe('/etc/hosts content', () => {
  const LOCAL = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
  it.each([
    { name: 'the pod IP and hostname', ips: ['123.45.67.89'], domain: '', aliases: [], want: `# Kubernetes-managed hosts file.\n${LOCAL}123.45.67.89\tpodFoo\n` },
    { name: 'the FQDN first with a domain, each IP', ips: ['203.0.113.1', 'fd00::1'], domain: 'domainFoo', aliases: [], want: `# Kubernetes-managed hosts file.\n${LOCAL}203.0.113.1\tpodFoo.domainFoo\tpodFoo\nfd00::1\tpodFoo.domainFoo\tpodFoo\n` },
    {
      name: 'host aliases under their header',
      ips: ['203.0.113.1'],
      domain: 'domainFoo',
      aliases: [{ ip: '123.45.67.89', hostnames: ['foo', 'bar', 'baz'] }, { ip: '456.78.90.123', hostnames: ['park', 'doo'] }],
      want: `# Kubernetes-managed hosts file.\n${LOCAL}203.0.113.1\tpodFoo.domainFoo\tpodFoo\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\n`,
    },
  ])('managed: $name', ({ ips, domain, aliases, want }) => {
    expect(managedHostsContent(ips, 'podFoo', domain, aliases)).toBe(want);
  });

  it('host network: the node\'s file under its own header, then the aliases', () => {
    const node = '127.0.0.1\tlocalhost\n10.0.0.5\tnode-1\n';
    expect(nodeHostsContent(node, [])).toBe(`# Kubernetes-managed hosts file (host network).\n${node}`);
    expect(nodeHostsContent(node, [{ ip: '123.45.67.89', hostnames: ['foo', 'bar'] }])).toBe(
      `# Kubernetes-managed hosts file (host network).\n${node}\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n`,
    );
  });

  it('the defaults are the kubelet\'s', () => {
    expect(DEFAULT_DNS_SETTINGS).toEqual({ clusterDNS: [], clusterDomain: '', resolvConf: '/etc/resolv.conf' });
  });
});
