import { Args, Flags } from '@oclif/core';
import { PodCommand, jsonReplacer, outputFlags } from '../base-command.js';
import { durationFlag } from '../flags.js';

export default class Events extends PodCommand<typeof Events> {
  static override summary = "List the node's events, like kubectl get events: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE.";
  static override description = `The events the kubelet records about this node's pods, with its reasons and messages, oldest first; a repeated event is listed once with its count, as "2m (x3 over 10m)". Without POD the table starts with NAMESPACE, as kubectl events -A prints it; POD (ns/name, name in namespace default, or a UID prefix) shows that pod's events only.

While a klet sync runs on the root dir they come from its local API (<root-dir>/klet.sock, /events): every event it still holds (its newest 1000 of any kind), correlated as the kubelet's recorder does before sending them to an API server (identical events counted, similar ones combined), except that no event is dropped by its rate limit, so counts can be higher than a cluster's. --watch then prints each event as it happens, a repeated one again with its new count.

Without a running sync, klet tells what the pods' records under the root dir and the runtime still know: Created and Started per container (counted from its restart count), the container's last failure (BackOff for a crash loop or an image pull back-off, ErrImageNeverPull, Failed for ErrImagePull, CreateContainerConfigError, ...), FailedMount, Evicted, an admission rejection, FailedCreatePodSandBox, and Killing for a pod being deleted. It cannot tell Pulled, probe failures (Unhealthy), how often a failure repeated, or anything of a pod whose record is gone; a time it did not keep shows as <unknown>. A line on stderr says so. --watch then reads them again every --interval.

-o json|yaml prints a v1 EventList; with --watch, one {"type":"ADDED"|"MODIFIED","object":Event} JSON line per change. --watch runs until Ctrl-C (exit 130).`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1',
    '<%= config.bin %> <%= command.id %> web-node1 --watch',
    '<%= config.bin %> <%= command.id %> -o json',
  ];
  static override args = { pod: Args.string({ description: "Only this pod's events: ns/name, name (namespace default), or a UID prefix" }) };
  static override flags = {
    ...outputFlags,
    watch: Flags.boolean({ char: 'w', summary: 'After listing them, print events as they happen, until Ctrl-C.', default: false }),
    interval: durationFlag({ summary: 'How often --watch reads the records and the runtime again when no klet sync runs, as a duration.', default: '1s' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Events);
    const deps = await this.deps();
    const { listEvents, watchEvents } = await import('../lib/services/events.js');
    const { eventTableRows, formatEventTable } = await import('../lib/status/format.js');
    const { formatTable } = await import('../lib/util/table.js');
    const namespaces = args.pod === undefined;
    const offline = (socketPath: string) =>
      this.notice(`klet events: no klet sync serves ${socketPath}: showing what the pods' records and the runtime still tell (see klet events --help)`);

    if (!flags.watch) {
      const list = await listEvents({ pod: args.pod }, deps);
      if (list.source === 'records') offline(list.socketPath);
      if (this.output === 'table' && list.events.length === 0) {
        this.notice('No events found.');
        return;
      }
      await this.printObject({ apiVersion: 'v1', kind: 'EventList', metadata: {}, items: list.events }, () => formatEventTable(list.events, new Date(), { namespaces }));
      return;
    }

    let header = true;
    for await (const update of watchEvents({ pod: args.pod, intervalMs: flags.interval }, deps)) {
      if (update.initial && update.source === 'records') offline(update.socketPath);
      if (this.output !== 'table') {
        for (const c of update.changes) process.stdout.write(JSON.stringify({ type: c.type, object: c.event }, jsonReplacer) + '\n');
        continue;
      }
      if (update.changes.length === 0) continue;
      // Each batch aligned on its own, as kubectl events --watch flushes each event; the header once.
      const { header: names, rows } = eventTableRows(
        update.changes.map((c) => c.event),
        new Date(),
        namespaces,
      );
      const lines = formatTable(names, rows).split('\n');
      process.stdout.write((header ? lines : lines.slice(1)).join('\n') + '\n');
      header = false;
    }
    // Ctrl-C ends a watch: exit as a shell reports an interrupted command.
    process.exitCode = this.interruptedBy === 'SIGTERM' ? 143 : 130;
  }
}
