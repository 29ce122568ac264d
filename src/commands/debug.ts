import { Args, Flags } from '@oclif/core';
import { PodCommand } from '../base-command.js';

export default class Debug extends PodCommand<typeof Debug> {
  static override summary = "Add a debug (ephemeral) container to a pod of this node's files or URLs (like kubectl debug), straight through the runtime.";
  static override description = `What kubectl debug POD --image IMG does with an ephemeral container, for the static and standalone pods klet runs from files and URLs (the API server gives those none; for a pod of the API server use kubectl debug). The container starts in the pod's running sandbox, sharing its network and IPC; with --target it joins that container's process namespace, so ps there shows the target's processes. It is never restarted, and shows in klet status and in the pod's ephemeralContainerStatuses (klet sync keeps it in the pod; it works with or without a running klet sync). Without -c it is named debugger-<5 characters> ("Defaulting debug container name to …" says which). With -i it attaches to it (-t: a terminal, in raw mode here) and klet exits with the container's exit code once it ends; one that ended before the attach shows its log. The command after -- replaces the image's entrypoint. POD is ns/name, name (namespace default) or a UID prefix.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> -it web-node1 --image busybox:1.36 --target main -- sh',
    '<%= config.bin %> <%= command.id %> -i kube-system/etcd-node1 --image busybox:1.36 --target etcd -- ps    # the target\'s processes; exits with ps\'s exit code',
    '<%= config.bin %> <%= command.id %> web-node1 --image busybox:1.36 -c probe -- sleep 3600    # then: klet exec web-node1 -c probe -- sh',
  ];
  static override strict = false;
  static override passesCommandAfterDash = true;
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name, or a UID prefix', required: true }) };
  static override flags = {
    image: Flags.string({ summary: 'Image of the debug container.', required: true }),
    target: Flags.string({ summary: "Container whose process namespace it shares (its processes show in ps)." }),
    container: Flags.string({ char: 'c', summary: 'Name of the debug container (default: debugger-<5 random characters>).' }),
    stdin: Flags.boolean({ char: 'i', summary: 'Keep its stdin open and attach to it; exit with its exit code.', default: false }),
    tty: Flags.boolean({ char: 't', summary: 'Give it a terminal (needs -i).', default: false }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Debug);
    // The command is what follows `--`, word for word (its -c is the command's, not -c/--container).
    const [pod, ...rest] = argv as string[];
    const command = this.commandAfterDash() ?? rest;
    const deps = await this.deps();
    const { debugPod } = await import('../lib/services/debug-container.js');
    const { terminalIo } = await import('../cli/terminal.js');
    const term = terminalIo({ stdin: flags.stdin, tty: flags.tty });
    let code: number;
    try {
      code = await debugPod(
        { pod: pod!, image: flags.image, target: flags.target, name: flags.container, stdin: flags.stdin, tty: flags.tty, command },
        term.io,
        deps,
        { out: (line) => process.stdout.write(line + '\n'), notice: (line) => this.notice(line) },
      );
    } finally {
      term.restore();
    }
    if (code !== 0) this.exit(code);
  }
}
