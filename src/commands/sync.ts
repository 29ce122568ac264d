import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class Sync extends BaseCommand<typeof Sync> {
  static override summary = 'Run the kubelet sync loop: keep this node converged with its pod sources.';
  static override description = 'The long-running kubelet: watches the manifest directory (and URL or API server), runs pod workers, the PLEG, restarts with back-off, and serves its state on a local socket.';
  static override examples = ['<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests'];
  static override strict = false;

  async run(): Promise<void> {
    throw new NotImplementedError('klet sync');
  }
}
