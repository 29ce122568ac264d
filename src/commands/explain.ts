import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';

export default class Explain extends PodCommand<typeof Explain> {
  static override summary = 'Explain why a pod is in its state, and what klet does next.';
  static override description = `One screen on POD (ns/name, name in namespace default, or a UID prefix): why it is in its state (CrashLoopBackOff, ErrImageNeverPull, a failing readiness or startup probe, a missing ConfigMap, an admission rejection, a failing init container, Completed, Terminating, ...), in plain sentences that keep the kubelet's reason names for searching; the sync loop's plan for it (what computePodActions decided: create the sandbox, start or restart which containers and why, kill which and why); each container's state, last exit code and reason, back-off and time left, its probes' results and last failure message, and the last lines of its log; the pod's problems (admission, volumes, sandbox); its newest events; and the next thing klet will do, and when.

While a klet sync runs on the root dir, the plan is that sync's last one for the pod (its local API's /plans) and the events are the ones it holds (as klet events shows them); an API pod its admission rejected (OutOfcpu, NodeAffinity, ...) is explained from the sync alone, as it has no record. Without one, the plan is computed from the pod's record and the runtime as the next sync would compute it, and the events are what the records and the runtime still tell (no probe failures).

-o json (or yaml) prints the explanation as a PodExplanation object, for scripts.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> web-node1',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1 --log-lines 20',
    "<%= config.bin %> <%= command.id %> web-node1 -o json | jq -r '.reason, .next.sentence'",
  ];
  static override args = { pod: Args.string({ description: 'The pod: ns/name, name (namespace default), or a UID prefix', required: true }) };
  static override flags = {
    ...outputFlags,
    'log-lines': Flags.integer({ summary: 'Lines of each container\'s log to show (0 for none).', default: 5, min: 0 }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Explain);
    const deps = await this.deps();
    const { explain } = await import('../lib/services/explain-pod.js');
    const { formatExplanation } = await import('../cli/explain.js');
    const x = await explain({ pod: args.pod, logLines: flags['log-lines'] }, deps);
    await this.printObject(x, () => formatExplanation(x, Date.now()));
  }
}
