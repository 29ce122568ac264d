import { Args } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class MountVolumes extends BaseCommand<typeof MountVolumes> {
  static override summary = "Set up a pod's volumes without starting it.";
  static override description = `Runs the volume manager for one pod: emptyDir, hostPath, configMap, secret, projected and downwardAPI volumes under the pod dir.

Not implemented yet: exits 3.`;
  static override examples = ['<%= config.bin %> <%= command.id %> examples/configured.yaml'];
  static override args = {
    file: Args.string({ description: 'Pod manifest (YAML or JSON); it may also hold ConfigMaps and Secrets' }),
  };

  async run(): Promise<void> {
    throw new NotImplementedError('klet mount-volumes');
  }
}
