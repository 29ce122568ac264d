import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';

export default class Delete extends PodCommand<typeof Delete> {
  static override summary = 'Delete pods: stop them gracefully, remove their sandboxes, containers, pod dirs and logs.';
  static override description = `Each container gets SIGTERM (through CRI StopContainer) and, after the pod's terminationGracePeriodSeconds (or --grace-period), SIGKILL; then the sandbox is stopped and removed, and the pod's log directory under /var/log/pods and its directory under <root-dir>/pods are removed, in that order: a pod whose log directory cannot be removed (the error names it) is kept, and deleting it again, or klet sync, finishes the job. POD is ns/name, name (namespace default) or a UID prefix. A pod still listed in a manifest directory that klet sync watches comes back: remove its manifest instead.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> web-node1',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1 default/job-node1',
    '<%= config.bin %> <%= command.id %> --all --grace-period 5',
    '<%= config.bin %> <%= command.id %> web-node1 --force',
  ];
  static override strict = false;
  static override args = { pod: Args.string({ description: 'Pods to delete: ns/name, name, or a UID prefix' }) };
  static override flags = {
    ...outputFlags,
    all: Flags.boolean({ summary: 'Delete every pod klet knows on this node.', default: false }),
    'grace-period': Flags.integer({ summary: "Seconds to wait after SIGTERM before SIGKILL; default: the pod's terminationGracePeriodSeconds.", min: 0 }),
    force: Flags.boolean({ summary: 'Kill immediately (grace period 0).', default: false }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Delete);
    const refs = argv as string[];
    const { InputError } = await import('../lib/errors.js');
    if (flags.all && refs.length > 0) throw new InputError('delete: give POD names or --all, not both');
    if (!flags.all && refs.length === 0) throw new InputError('delete: no POD given (name pods, or use --all)');
    const { deletePods } = await import('../lib/services/delete-pods.js');
    const grace = flags.force ? 0 : flags['grace-period'];
    const { deleted } = await deletePods({ refs, all: flags.all, gracePeriodSeconds: grace }, await this.deps());
    await this.printObject({ deleted }, () =>
      deleted.length === 0 ? 'No pods to delete.' : deleted.map((d) => `pod "${d.namespace}/${d.name}" deleted`).join('\n'),
    );
  }
}
