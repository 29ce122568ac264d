import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { NotImplementedError } from '../lib/errors.js';

export default class Probe extends BaseCommand<typeof Probe> {
  static override summary = "Run a pod's liveness, readiness or startup probes once.";
  static override description = `Runs exec, httpGet, tcpSocket or grpc probes of a running pod the way the kubelet prober does and prints the results.

Not implemented yet: exits 3.`;
  static override examples = ['<%= config.bin %> <%= command.id %> kube-system/etcd-node1 --type readiness'];
  static override args = {
    pod: Args.string({ description: 'The pod, as [NAMESPACE/]NAME' }),
  };
  static override flags = {
    type: Flags.option({
      summary: 'Which probes to run.',
      options: ['liveness', 'readiness', 'startup'] as const,
    })(),
  };

  async run(): Promise<void> {
    throw new NotImplementedError('klet probe');
  }
}
