import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';
import { durationFlag } from '../flags.js';

export default class Top extends PodCommand<typeof Top> {
  static override summary = "Show the pods' CPU and memory, like kubectl top pod: CPU(cores) in millicores, MEMORY(bytes) as the working set.";
  static override description = `The numbers kubectl top pod shows for a pod on a kubelet node, from the same Summary API (/stats/summary) that metrics-server reads: CPU is the rate of the containers' cumulative CPU time over the sampling window, in millicores (1000m = one core busy), rounded up; memory is the working set (usage minus inactive file pages, what the kubelet compares with limits and evicts on), in Mi. A pod's figures are the sum of its containers'. Only the pods of this root dir and node name are shown.

While a klet sync runs on the root dir the figures come from its local API: the sync samples the runtime every 10 s, as the kubelet's cAdvisor does, so CPU is the rate since the last sample. Without one, klet reads the runtime, waits --window and reads it again.

Without POD the table starts with NAMESPACE, as kubectl top pod -A prints it. --containers gives one row per container. --watch prints a new table every --interval until Ctrl-C. -o json|yaml prints the Summary (v1alpha1) with only CPU and memory.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1 --containers',
    '<%= config.bin %> <%= command.id %> --sort-by memory',
    '<%= config.bin %> <%= command.id %> -w --interval 5s',
  ];
  static override args = { pod: Args.string({ description: 'Only this pod: ns/name, name (namespace default), or a UID prefix' }) };
  static override flags = {
    ...outputFlags,
    containers: Flags.boolean({ summary: 'One row per container (POD, NAME), as kubectl top pod --containers.', default: false }),
    'sort-by': Flags.option({ options: ['cpu', 'memory'] as const, summary: 'Sort by CPU or memory, largest first.' })(),
    watch: Flags.boolean({ char: 'w', summary: 'Print a new table every --interval, until Ctrl-C.', default: false }),
    interval: durationFlag({ summary: 'How often --watch reads again, as a duration.', default: '2s' }),
    window: durationFlag({ summary: 'Without a running klet sync: how long between the two readings CPU is measured over, as a duration.', default: '1s' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Top);
    const deps = await this.deps();
    const { TopReader } = await import('../lib/services/top.js');
    const { topTable } = await import('../lib/stats/top.js');
    const { formatTable } = await import('../lib/util/table.js');
    const { sleep } = await import('../lib/services/deps.js');
    const reader = new TopReader({ pod: args.pod, containers: flags.containers, sortBy: flags['sort-by'], windowMs: flags.window }, deps);
    const table = (rows: Parameters<typeof topTable>[0]) => {
      const t = topTable(rows, { namespaces: args.pod === undefined, containers: flags.containers });
      return formatTable(t.header, t.rows);
    };
    let first = true;
    do {
      if (!first) await sleep(flags.interval, this.signal).catch(() => undefined);
      if (this.signal.aborted) break;
      const r = await reader.next();
      if (first && r.source === 'runtime') this.notice(`klet top: no klet sync serves ${r.socketPath}: read the runtime twice, ${flags.window / 1000}s apart`);
      if (this.output === 'table' && r.rows.length === 0) this.notice('No resources found.');
      else await this.printObject(r.summary, () => table(r.rows));
      if (flags.watch && this.output === 'table') process.stdout.write('\n');
      first = false;
    } while (flags.watch && !this.signal.aborted);
    if (flags.watch) process.exitCode = this.interruptedBy === 'SIGTERM' ? 143 : 130;
  }
}
