import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class MountVolumes extends BaseCommand<typeof MountVolumes> {
  static override summary = "Set up a pod's volumes without starting it.";
  static override description = 'Runs the volume manager for one pod: emptyDir, hostPath, configMap, secret, projected and downwardAPI volumes under the pod dir.';
  static override examples = ['<%= config.bin %> <%= command.id %> examples/pod-with-volumes.yaml'];
  static override strict = false;

  async run(): Promise<void> {
    throw new NotImplementedError('klet mount-volumes');
  }
}
