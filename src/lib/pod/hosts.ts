/**
 * The /etc/hosts the kubelet gives a pod's containers (kubelet_pods.go
 * managedHostsFileContent, nodeHostsFileContent,
 * hostsEntriesFromHostAliases): pure content, the caller writes it.
 */
import type { V1HostAlias } from '@kubernetes/client-node';

export const MANAGED_HOSTS_HEADER = '# Kubernetes-managed hosts file.\n';
export const MANAGED_HOSTS_HEADER_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

/** spec.hostAliases as hosts lines under the kubelet's header; '' without any. */
export function hostAliasesEntries(aliases: readonly V1HostAlias[] | undefined): string {
  if (!aliases || aliases.length === 0) return '';
  const lines = aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`);
  return `\n# Entries added by HostAliases.\n${lines.join('')}`;
}

/**
 * A pod-network pod's hosts file: localhost entries, each pod IP with the
 * pod's hostname (its FQDN first when it has a domain: spec.subdomain), then
 * the host aliases.
 */
export function managedHostsContent(podIPs: readonly string[], hostname: string, domain: string, aliases?: readonly V1HostAlias[]): string {
  let out =
    MANAGED_HOSTS_HEADER +
    '127.0.0.1\tlocalhost\n' +
    '::1\tlocalhost ip6-localhost ip6-loopback\n' +
    'fe00::0\tip6-localnet\n' +
    'fe00::0\tip6-mcastprefix\n' +
    'fe00::1\tip6-allnodes\n' +
    'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) out += domain !== '' ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + hostAliasesEntries(aliases);
}

/** A host-network pod's hosts file: the node's own, under the host-network header, then the host aliases. */
export function nodeHostsContent(nodeHosts: string, aliases?: readonly V1HostAlias[]): string {
  return MANAGED_HOSTS_HEADER_HOST_NETWORK + nodeHosts + hostAliasesEntries(aliases);
}
