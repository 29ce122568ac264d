import { Args, Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';

export default class PortForward extends PodCommand<typeof PortForward> {
  static override summary = "Forward local ports to a pod's ports (like kubectl port-forward), until Ctrl-C.";
  static override description = `Each PORT is [LOCAL:]REMOTE: REMOTE alone listens on the same port, :REMOTE on any free one. Connections go through CRI PortForward and the runtime's streaming server (SPDY, portforward.k8s.io), one session with a stream pair per connection, as kubectl's through the kubelet; a connection to a port nothing listens on in the pod is closed with the runtime's error on stderr. POD is ns/name, name (namespace default) or a UID prefix.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> web-node1 8080:80',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1 :2379 2381',
    '<%= config.bin %> <%= command.id %> web-node1 8080:80 --address 0.0.0.0',
  ];
  static override strict = false;
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name, or a UID prefix', required: true }) };
  static override flags = {
    address: Flags.string({ summary: 'Local addresses to listen on, comma-separated (localhost: 127.0.0.1 and ::1).', default: 'localhost' }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(PortForward);
    const [pod, ...specs] = argv as string[];
    const { parsePortMapping, portForward } = await import('../lib/services/debug-pod.js');
    const ports = specs.map(parsePortMapping);
    const addresses = flags.address.split(',').flatMap((a) => (a.trim() === 'localhost' ? ['127.0.0.1', '::1'] : [a.trim()]));
    const deps = await this.deps();
    await portForward({ pod: pod!, ports, addresses }, deps, {
      listening: (address, local, remote) => process.stdout.write(`Forwarding from ${address.includes(':') ? `[${address}]` : address}:${local} -> ${remote}\n`),
      connectionError: (message) => this.notice(message),
    });
  }
}
