import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class Status extends BaseCommand<typeof Status> {
  static override summary = 'Show the node and its pods, like kubectl get pods for this node.';
  static override description = 'Prints a node summary (runtime, pod counts, root dir) and a pod table; with POD, the full status of one pod.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> kube-system/etcd -o yaml'];
  static override strict = false;

  async run(): Promise<void> {
    throw new NotImplementedError('klet status');
  }
}
