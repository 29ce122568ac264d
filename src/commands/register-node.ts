import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class RegisterNode extends BaseCommand<typeof RegisterNode> {
  static override summary = 'Register this node with a Kubernetes API server and keep its status and lease fresh.';
  static override description = `Creates or updates the Node object for --node-name (capacity, allocatable, addresses, conditions, node info from the runtime) and renews its Lease, as the kubelet does on start-up.

Not implemented yet: exits 3.`;
  static override examples = ['<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf'];
  static override flags = {
    kubeconfig: Flags.string({ summary: 'Kubeconfig with the API server and the credentials of this node.' }),
  };

  async run(): Promise<void> {
    throw new NotImplementedError('klet register-node');
  }
}
