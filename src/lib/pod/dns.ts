/**
 * A pod's DNS: the resolver configuration its sandbox gets (CRI
 * PodSandboxConfig.dns_config) and its hostname and domain, as the kubelet
 * forms them (pkg/kubelet/network/dns/dns.go GetPodDNS,
 * kubelet_pods.go GeneratePodHostNameAndDomain, util.GetNodenameForKernel).
 *
 * Pure: the node's settings come in as DnsSettings, whose fields are the
 * KubeletConfiguration's (clusterDNS, clusterDomain, resolvConf), and the
 * host's resolv.conf as text already read (readResolvConf does the reading).
 * Warnings the kubelet records as events are returned, not sent.
 */
import fsp from 'node:fs/promises';
import net from 'node:net';
import type { V1Pod, V1PodDNSConfigOption } from '@kubernetes/client-node';
import { fsErrorReason } from '../errors.js';
import { podDesc } from './key.js';
import { isDNS1123Label } from './names.js';

/** The node's DNS settings, named as the KubeletConfiguration's fields. */
export interface DnsSettings {
  /** Nameservers of ClusterFirst pods (--cluster-dns); empty: ClusterFirst falls back to Default. */
  clusterDNS: string[];
  /** The cluster's domain (--cluster-domain), e.g. cluster.local; empty: no cluster search domains. */
  clusterDomain: string;
  /** The resolver file Default pods start from (--resolv-conf); '' means none. */
  resolvConf: string;
}

/** The kubelet's defaults (KubeletConfiguration v1beta1): no cluster DNS, no domain, /etc/resolv.conf. */
export const DEFAULT_DNS_SETTINGS: Readonly<DnsSettings> = Object.freeze({ clusterDNS: [], clusterDomain: '', resolvConf: '/etc/resolv.conf' });

/** CRI DNSConfig: nameservers, search domains, options. */
export interface ResolvConf {
  servers: string[];
  searches: string[];
  options: string[];
}

/** The API server's limits the kubelet applies to what it writes (core validation). */
export const MAX_DNS_NAMESERVERS = 3;
export const MAX_DNS_SEARCH_PATHS = 32;
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
const MAX_SEARCH_PATH_CHARS = 253;
/** The longest hostname the kernel takes (the kubelet's hostnameMaxLen), and an FQDN (fqdnMaxLen). */
const HOSTNAME_MAX_LEN = 63;
const FQDN_MAX_LEN = 64;
/** The kubelet's options for ClusterFirst pods. */
const CLUSTER_FIRST_OPTIONS = ['ndots:5'];

/** An event the kubelet records while forming the config: about the pod, or about the node. */
export interface DnsWarning {
  object: 'pod' | 'node';
  reason: 'DNSConfigForming' | 'MissingClusterDNS' | 'CheckLimitsForResolvConf';
  message: string;
}

const byteLength = (s: string) => Buffer.byteLength(s);

/** An option's name (what comes before the first ':'). */
const optionName = (o: string) => o.split(':')[0] ?? '';

/**
 * `options` merged by name, a later value replacing an earlier one. The
 * kubelet goes through a Go map, so its order is random; klet keeps each
 * name where it first appeared.
 */
function mergeOptions(options: string[], more: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...options, ...more]) byName.set(optionName(o), o);
  return [...byName.values()];
}

/**
 * Parse a resolv.conf as the kubelet does: nameserver lines add up, the last
 * search line wins ("." dropped, one trailing dot trimmed), options merge by
 * name; lines starting with '#' are comments; domain lines are not read. A
 * nameserver line without an address is an error (the file is refused).
 */
export function parseResolvConf(text: string): { config: ResolvConf; errors: string[] } {
  const config: ResolvConf = { servers: [], searches: [], options: [] };
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    const [key, ...rest] = fields;
    if (key === 'nameserver') {
      if (rest[0] !== undefined) config.servers.push(rest[0]);
      else errors.push('nameserver list is empty ');
    } else if (key === 'search') {
      config.searches = rest.filter((s) => s !== '.').map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
    } else if (key === 'options') {
      config.options = mergeOptions(config.options, rest);
    }
  }
  return { config, errors };
}

/** An error reading or parsing the resolver file: the pod's sandbox cannot be made. */
export class ResolvConfError extends Error {
  /** The error alone, without GetPodDNS's wrapping (what CheckLimitsForResolvConf's event says). */
  readonly detail: string;
  constructor(message: string, detail: string, options?: ErrorOptions) {
    super(message, options);
    this.detail = detail;
  }
}

/**
 * The host's DNS config from the resolver file (empty when `file` is ''),
 * read at each call as the kubelet does: a changed file applies to the next
 * sandbox. Errors carry the kubelet's wording (Go's "open FILE: reason").
 */
export async function readResolvConf(file: string): Promise<ResolvConf> {
  if (file === '') return { servers: [], searches: [], options: [] };
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    const op = (err as { code?: unknown }).code === 'EISDIR' ? 'read' : 'open';
    const message = `${op} ${file}: ${fsErrorReason(err)}`;
    throw new ResolvConfError(message, message, { cause: err });
  }
  const { config, errors } = parseResolvConf(text);
  if (errors.length > 0) {
    const agg = errors.length === 1 ? (errors[0] ?? '') : `[${errors.join(', ')}]`;
    throw new ResolvConfError(`Encountered error while parsing resolv conf file. Error: ${agg}`, agg);
  }
  return config;
}

/** The entries of a --cluster-dns list that are not IP addresses (the kubelet logs and skips them; klet refuses them). */
export function invalidClusterDNS(ips: readonly string[]): string[] {
  return ips.filter((ip) => net.isIP(ip) === 0);
}

/** An IP as Go's net.IP String() prints it (IPv6 compressed and lower-case, IPv4-mapped as IPv4). */
export function canonicalIP(ip: string): string {
  if (net.isIPv4(ip)) return ip;
  const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
  }
  return host;
}

type DnsType = 'cluster' | 'host' | 'none';

/** getPodDNSType: ClusterFirst on the host network is Default; an unknown policy is ClusterFirst. */
function podDnsType(pod: V1Pod): DnsType {
  switch (pod.spec?.dnsPolicy ?? 'ClusterFirst') {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      return pod.spec?.hostNetwork === true ? 'host' : 'cluster';
    case 'Default':
      return 'host';
    default:
      return 'cluster';
  }
}

const unique = (xs: string[]) => [...new Set(xs)];

/** formDNSSearchFitsLimits: at most 32 domains, none over 253 characters, the line at most 2048. */
function searchFitsLimits(searches: string[], warnings: DnsWarning[]): string[] {
  let exceeded = false;
  let out = searches;
  if (out.length > MAX_DNS_SEARCH_PATHS) {
    out = out.slice(0, MAX_DNS_SEARCH_PATHS);
    exceeded = true;
  }
  const fitting = out.filter((s) => byteLength(s) <= MAX_SEARCH_PATH_CHARS);
  if (fitting.length !== out.length) exceeded = true;
  out = fitting;
  const lineLength = byteLength(out.join(' '));
  if (lineLength > MAX_DNS_SEARCH_LIST_CHARS) {
    let cut = 0;
    let cutLength = 0;
    for (let i = out.length - 1; i >= 0; i--) {
      cutLength += byteLength(out[i]!) + 1;
      cut++;
      if (lineLength - cutLength <= MAX_DNS_SEARCH_LIST_CHARS) break;
    }
    out = out.slice(0, out.length - cut);
    exceeded = true;
  }
  if (exceeded) {
    warnings.push({
      object: 'pod',
      reason: 'DNSConfigForming',
      message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${out.join(' ')}`,
    });
  }
  return out;
}

function nameserversFitLimits(servers: string[], warnings: DnsWarning[]): string[] {
  if (servers.length <= MAX_DNS_NAMESERVERS) return servers;
  const out = servers.slice(0, MAX_DNS_NAMESERVERS);
  warnings.push({
    object: 'pod',
    reason: 'DNSConfigForming',
    message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${out.join(' ')}`,
  });
  return out;
}

function podOptions(options: V1PodDNSConfigOption[] | undefined): string[] {
  return (options ?? []).map((o) => (o.value !== undefined && o.value !== '' ? `${o.name ?? ''}:${o.value}` : (o.name ?? '')));
}

/**
 * The sandbox's DNS config (GetPodDNS), from the host's (`host`, read from
 * settings.resolvConf) and the node's settings, with the events the kubelet
 * records on the way. `nodeIPs` are the node's configured IPs (--node-ip):
 * with no resolver file, Default pods get a loopback nameserver per IP family.
 */
export function podDNSConfig(pod: V1Pod, host: ResolvConf, settings: DnsSettings, nodeIPs: readonly string[] = []): { config: ResolvConf; warnings: DnsWarning[] } {
  const warnings: DnsWarning[] = [];
  let cfg: ResolvConf = { servers: [...host.servers], searches: [...host.searches], options: [...host.options] };
  const type = podDnsType(pod);
  if (type === 'none') cfg = { servers: [], searches: [], options: [] };
  let fallback = type === 'host';
  if (type === 'cluster') {
    if (settings.clusterDNS.length > 0) {
      cfg.servers = settings.clusterDNS.map(canonicalIP);
      if (settings.clusterDomain !== '') {
        const d = settings.clusterDomain;
        const ns = pod.metadata?.namespace ?? 'default';
        cfg.searches = unique([`${ns}.svc.${d}`, `svc.${d}`, d, ...cfg.searches]);
      }
      cfg.options = [...CLUSTER_FIRST_OPTIONS];
    } else {
      const message = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`;
      warnings.push({ object: 'node', reason: 'MissingClusterDNS', message });
      warnings.push({ object: 'pod', reason: 'MissingClusterDNS', message: `pod: "${podDesc(pod)}". ${message}` });
      fallback = true;
    }
  }
  // No resolver file: a nameserver "on the local machine", and no search domains.
  if (fallback && settings.resolvConf === '') {
    for (const ip of nodeIPs) cfg.servers.push(net.isIPv6(ip) ? '::1' : '127.0.0.1');
    if (cfg.servers.length === 0) cfg.servers.push('127.0.0.1');
    cfg.searches = ['.'];
  }
  const extra = pod.spec?.dnsConfig;
  if (extra) {
    cfg.servers = unique([...cfg.servers, ...(extra.nameservers ?? [])]);
    cfg.searches = unique([...cfg.searches, ...(extra.searches ?? [])]);
    cfg.options = mergeOptions(
      cfg.options.map((o) => (o.endsWith(':') ? o.slice(0, -1) : o)),
      podOptions(extra.options),
    );
  }
  cfg.servers = nameserversFitLimits(cfg.servers, warnings);
  cfg.searches = searchFitsLimits(cfg.searches, warnings);
  return { config: cfg, warnings };
}

/**
 * CheckLimitsForResolvConf: the node event the kubelet records once as its
 * sync loop starts when the resolver file's search line cannot fit in pods
 * (the cluster's three domains counted), or null.
 */
export function resolvConfLimitWarning(file: string, host: ResolvConf, clusterDomain: string): string | null {
  const limit = clusterDomain !== '' ? MAX_DNS_SEARCH_PATHS - 3 : MAX_DNS_SEARCH_PATHS;
  if (host.searches.length > limit) return `Resolv.conf file '${file}' contains search line consisting of more than ${limit} domains!`;
  if (host.searches.some((s) => byteLength(s) > MAX_SEARCH_PATH_CHARS)) {
    return `Resolv.conf file ${JSON.stringify(file)} contains a search path which length is more than allowed ${MAX_SEARCH_PATH_CHARS} chars!`;
  }
  if (byteLength(host.searches.join(' ')) > MAX_DNS_SEARCH_LIST_CHARS) {
    return `Resolv.conf file '${file}' contains search line which length is more than allowed ${MAX_DNS_SEARCH_LIST_CHARS} chars!`;
  }
  return null;
}

/** A pod whose hostname or domain cannot be made (the sandbox is refused, as the kubelet's). */
export class PodHostnameError extends Error {}

/** A hostname over 63 characters is cut there, then trailing '-' and '.' trimmed (truncatePodHostnameIfNeeded). */
function truncateHostname(podName: string, hostname: string): string {
  if (hostname.length <= HOSTNAME_MAX_LEN) return hostname;
  const truncated = hostname.slice(0, HOSTNAME_MAX_LEN).replace(/[-.]+$/, '');
  if (truncated === '') throw new PodHostnameError(`hostname for pod ${JSON.stringify(podName)} was invalid: ${JSON.stringify(hostname)}`);
  return truncated;
}

/**
 * The pod's hostname (spec.hostname, else its name, cut to 63) and domain
 * (`<subdomain>.<namespace>.svc.<clusterDomain>` when spec.subdomain is set,
 * else ''), as GeneratePodHostNameAndDomain (the HostnameOverride feature,
 * alpha and off by default in 1.34, is not read).
 */
export function podHostnameAndDomain(pod: V1Pod, clusterDomain: string): { hostname: string; domain: string } {
  const name = pod.metadata?.name ?? '';
  let hostname = name;
  const specHostname = pod.spec?.hostname ?? '';
  if (specHostname !== '') {
    const errs = isDNS1123Label(specHostname);
    if (errs.length > 0) throw new PodHostnameError(`pod Hostname ${JSON.stringify(specHostname)} is not a valid DNS label: ${errs.join(';')}`);
    hostname = specHostname;
  }
  hostname = truncateHostname(name, hostname);
  const subdomain = pod.spec?.subdomain ?? '';
  let domain = '';
  if (subdomain !== '') {
    const errs = isDNS1123Label(subdomain);
    if (errs.length > 0) throw new PodHostnameError(`pod Subdomain ${JSON.stringify(subdomain)} is not a valid DNS label: ${errs.join(';')}`);
    domain = `${subdomain}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}`;
  }
  return { hostname, domain };
}

/**
 * The sandbox's hostname (the kernel's nodename): '' on the host network
 * (the node's own), the FQDN with setHostnameAsFQDN and a domain (at most
 * 64 characters), else the short hostname.
 */
export function sandboxHostname(pod: V1Pod, clusterDomain: string): string {
  if (pod.spec?.hostNetwork === true) return '';
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  if (domain === '' || pod.spec?.setHostnameAsFQDN !== true) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > FQDN_MAX_LEN) {
    throw new PodHostnameError(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDN_MAX_LEN} characters is the max, ${fqdn.length} characters requested)`,
    );
  }
  return fqdn;
}
