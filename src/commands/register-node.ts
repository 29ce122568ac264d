import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class RegisterNode extends BaseCommand<typeof RegisterNode> {
  static override summary = 'Register this node with a Kubernetes API server and keep its status and lease fresh.';
  static override description = 'Creates or updates the Node object for --node-name (capacity, allocatable, addresses, conditions, node info from the runtime) and renews its Lease, as the kubelet does on start-up.';
  static override examples = ['<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf'];
  static override strict = false;

  async run(): Promise<void> {
    throw new NotImplementedError('klet register-node');
  }
}
