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
    const ctx = await this.syncContext();
    const { findPods } = await import('../lib/kuberuntime/lookup.js');
    const { NotFoundError, InputError } = await import('../lib/errors.js');
    const [pod] = await findPods(ctx, [args.pod]);
    const target = pod!;
    const specNames = [...(target.spec?.spec?.initContainers ?? []), ...(target.spec?.spec?.containers ?? [])].map((c) => c.name);
    const { podLogDir, containerLogDir, latestLogFile, readContainerLog } = await import('../lib/logs/index.js');
    const dir = podLogDir(target.namespace, target.name, target.uid);
    let names = specNames;
    if (names.length === 0) {
      const fsp = await import('node:fs/promises');
      names = await fsp.readdir(dir).catch(() => []);
    }
    let container = flags.container;
    if (container === undefined) {
      const apps = target.spec?.spec?.containers?.map((c) => c.name) ?? names;
      if (apps.length !== 1) {
        throw new InputError(`a container name must be specified for pod ${target.namespace}/${target.name}, choose one of: [${names.join(' ')}]`);
      }
      container = apps[0]!;
    } else if (!names.includes(container)) {
      throw new NotFoundError(`container ${container} is not valid for pod ${target.namespace}/${target.name}, choose one of: [${names.join(' ')}]`);
    }
    const file = await latestLogFile(containerLogDir(dir, container), { previous: flags.previous });
    if (file === null) {
      throw new NotFoundError(
        flags.previous
          ? `previous terminated container "${container}" in pod "${target.name}" not found`
          : `container "${container}" in pod "${target.name}" has no logs yet`,
      );
    }
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    const { listContainersRunning } = await import('../lib/kuberuntime/runtime-status.js');
    try {
      for await (const chunk of readContainerLog(file, {
        follow: flags.follow,
        tail: flags.tail,
        timestamps: flags.timestamps,
        signal: controller.signal,
        isRunning: () => listContainersRunning(ctx.cri, target.uid, container),
      })) {
        if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once('drain', r));
      }
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  }
}
