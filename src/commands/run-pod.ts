import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class RunPod extends BaseCommand<typeof RunPod> {
  static override summary = 'Run one pod from a manifest on this node and wait for it.';
  static override description = 'Syncs one Pod manifest through CRI the way the kubelet does (sandbox, images, init containers, containers) and waits until it is running, ready or completed.';
  static override examples = ['<%= config.bin %> <%= command.id %> examples/nginx.yaml', '<%= config.bin %> <%= command.id %> job.yaml --wait completed --rm'];
  static override strict = false;

  async run(): Promise<void> {
    throw new NotImplementedError('klet run-pod');
  }
}
