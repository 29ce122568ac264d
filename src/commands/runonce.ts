import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class RunOnce extends BaseCommand<typeof RunOnce> {
  static override summary = 'Start every static pod from a manifest directory once, wait for each, and report.';
  static override description = 'Reads every manifest in --manifest-dir (default /etc/kubernetes/manifests), starts all pods concurrently, waits per pod by its restart policy, prints a per-pod result table and exits non-zero if any pod failed.';
  static override examples = ['<%= config.bin %> <%= command.id %> --manifest-dir examples/', '<%= config.bin %> <%= command.id %> --manifest-dir /etc/kubernetes/manifests -o json'];
  static override strict = false;

  async run(): Promise<void> {
    throw new NotImplementedError('klet runonce');
  }
}
