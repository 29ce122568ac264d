import { Args, Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';

export default class Attach extends PodCommand<typeof Attach> {
  static override summary = "Attach to a running container's main process (like kubectl attach).";
  static override description = `Its output from now on, and with -i this terminal's input (the container must have been made with stdin: true; with tty: true its terminal is used, in raw mode here). Ends when the process ends, or with Ctrl-C (the container keeps running). POD is ns/name, name (namespace default) or a UID prefix.`;
  static override examples = ['<%= config.bin %> <%= command.id %> web-node1', '<%= config.bin %> <%= command.id %> -i default/shell-node1 -c main'];
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name, or a UID prefix', required: true }) };
  static override flags = {
    container: Flags.string({ char: 'c', summary: 'Container name (default: the default-container annotation, else the first).' }),
    stdin: Flags.boolean({ char: 'i', summary: "Pass this process's stdin to the container.", default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Attach);
    const deps = await this.deps();
    const { attachToPod, resolveTarget } = await import('../lib/services/debug-pod.js');
    const target = await resolveTarget({ pod: args.pod, container: flags.container }, deps);
    if (target.defaulted) this.notice(`Defaulted container "${target.container}" out of: ${target.defaulted.from.join(', ')}`);
    const tty = target.pod.spec?.spec?.containers?.find((c) => c.name === target.container)?.tty === true;
    const { terminalIo } = await import('../cli/terminal.js');
    const term = terminalIo({ stdin: flags.stdin, tty });
    let code: number;
    try {
      code = await attachToPod(target, { stdin: flags.stdin }, term.io, deps);
    } finally {
      term.restore();
    }
    if (code !== 0) this.exit(code);
  }
}
