import { Args, Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';

export default class Logs extends PodCommand<typeof Logs> {
  static override summary = "Print a container's logs (like kubectl logs), from the CRI log files.";
  static override description = `Reads /var/log/pods/<namespace>_<name>_<uid>/<container>/<restartCount>.log, the files the runtime writes in the CRI log format (timestamp, stream, P/F tag, message), joining partial lines. POD is ns/name, name (namespace default) or a UID prefix. A pod with one container needs no -c.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> web-node1',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1 -f',
    '<%= config.bin %> <%= command.id %> web-node1 -c sidecar --tail 20 --timestamps',
    '<%= config.bin %> <%= command.id %> job-node1 --previous',
  ];
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name, or a UID prefix', required: true }) };
  static override flags = {
    container: Flags.string({ char: 'c', summary: 'Container name (required when the pod has several).' }),
    follow: Flags.boolean({ char: 'f', summary: 'Keep printing new lines until the container exits or Ctrl-C.', default: false }),
    previous: Flags.boolean({ char: 'p', summary: 'Logs of the previous instance of the container (before its last restart).', default: false }),
    tail: Flags.integer({ summary: 'Lines from the end to show; -1 for all.', default: -1, min: -1 }),
    timestamps: Flags.boolean({ summary: 'Prefix each line with its RFC3339Nano timestamp.', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Logs);
    const deps = await this.deps();
    const { readLogs } = await import('../lib/services/read-logs.js');
    const chunks = await readLogs(
      { pod: args.pod, container: flags.container, follow: flags.follow, previous: flags.previous, tail: flags.tail, timestamps: flags.timestamps },
      deps,
    );
    for await (const chunk of chunks) {
      if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once('drain', r));
    }
  }
}
