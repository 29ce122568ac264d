/**
 * The node's addresses: the IPv4 address of the interface holding the
 * default route (as the kubelet picks its node IP without --node-ip), then
 * any other non-loopback address.
 */
import fs from 'node:fs';
import os from 'node:os';

function defaultRouteInterface(): string | null {
  try {
    for (const line of fs.readFileSync('/proc/net/route', 'utf8').split('\n').slice(1)) {
      const [iface, dest, , flags] = line.trim().split(/\s+/);
      // Destination 00000000 with the RTF_UP flag is the default route.
      if (dest === '00000000' && iface && (Number.parseInt(flags ?? '0', 16) & 1) === 1) return iface;
    }
  } catch {
    // no /proc/net/route
  }
  return null;
}

/** The node's addresses now (read each call: a long-running sync sees a changed address; cache on a NodeCache). */
export function hostIPs(): string[] {
  const ifaces = os.networkInterfaces();
  const preferred = defaultRouteInterface();
  const ips: string[] = [];
  const add = (name: string) => {
    for (const a of ifaces[name] ?? []) {
      if (!a.internal && a.family === 'IPv4' && !ips.includes(a.address)) ips.push(a.address);
    }
  };
  if (preferred) add(preferred);
  if (ips.length === 0) for (const name of Object.keys(ifaces)) add(name);
  return ips.length > 0 ? ips : ['127.0.0.1'];
}

/** The machine's hostname, as the Node's Hostname address (and the kubelet's serving certificate) name it. */
export function nodeHostname(): string {
  return os.hostname().toLowerCase();
}

export interface NodeAddress {
  type: 'InternalIP' | 'Hostname';
  address: string;
}

/** The Node's status.addresses: InternalIP (--node-ip, else the first host IP), then Hostname. */
export function nodeAddresses(nodeIP: string | undefined, ips: readonly string[], hostname: string): NodeAddress[] {
  const ip = nodeIP ?? ips[0];
  return [...(ip ? [{ type: 'InternalIP' as const, address: ip }] : []), { type: 'Hostname', address: hostname }];
}
