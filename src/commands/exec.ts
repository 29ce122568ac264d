import { Args, Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';

export default class Exec extends PodCommand<typeof Exec> {
  static override summary = 'Run a command in a running container (like kubectl exec), straight through the runtime.';
  static override description = `CRI Exec answers a URL on the runtime's streaming server, and klet speaks to it as kubectl does through the kubelet (SPDY, the v4.channel.k8s.io protocol): the command's stdout and stderr come back as they are written, -i sends this terminal's stdin (its end closes the command's stdin), -t gives it a TTY that follows this window's size. klet exits with the command's exit code. Works with or without a running klet sync. POD is ns/name, name (namespace default) or a UID prefix; without -c, the container the kubectl.kubernetes.io/default-container annotation names, else the first one (a line on stderr says which when there are several).`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> web-node1 -- ls /usr/share/nginx/html',
    '<%= config.bin %> <%= command.id %> -it kube-system/etcd-node1 -- sh',
    'echo hello | <%= config.bin %> <%= command.id %> -i web-node1 -c sidecar -- cat',
  ];
  static override strict = false;
  static override passesCommandAfterDash = true;
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name, or a UID prefix', required: true }) };
  static override flags = {
    container: Flags.string({ char: 'c', summary: 'Container name (default: the default-container annotation, else the first).' }),
    stdin: Flags.boolean({ char: 'i', summary: "Pass this process's stdin to the command.", default: false }),
    tty: Flags.boolean({ char: 't', summary: 'Give the command a terminal (raw mode here while it runs; window size follows).', default: false }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Exec);
    // The command is what follows `--`, word for word (its -c is the command's, not -c/--container).
    const [pod, ...rest] = argv as string[];
    const command = this.commandAfterDash() ?? rest;
    if (command.length === 0) {
      const { InputError } = await import('../lib/errors.js');
      throw new InputError('no command given: put it after --, as in klet exec POD -- sh');
    }
    const deps = await this.deps();
    const { execInPod, resolveTarget } = await import('../lib/services/debug-pod.js');
    const target = await resolveTarget({ pod: pod!, container: flags.container }, deps);
    if (target.defaulted) this.notice(`Defaulted container "${target.container}" out of: ${target.defaulted.from.join(', ')}`);
    const { terminalIo } = await import('../cli/terminal.js');
    const term = terminalIo({ stdin: flags.stdin, tty: flags.tty });
    let code: number;
    try {
      code = await execInPod(target, { pod: pod!, command, stdin: flags.stdin, tty: flags.tty }, term.io, deps);
    } finally {
      term.restore();
    }
    if (code !== 0) this.exit(code);
  }
}
