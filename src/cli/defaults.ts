import os from 'node:os';

/** Defaults of klet's global flags that are klet's own (the endpoint's is the kubelet's: lib/cri/endpoint.ts). */
export const DEFAULT_ROOT_DIR = '/var/lib/klet';

/** The node's name: --node-name, or the hostname, lower-cased (as the kubelet's --hostname-override default). */
export function nodeNameOf(flag: string | undefined): string {
  return (flag ?? os.hostname()).toLowerCase();
}
