import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags, jsonReplacer } from '../base-command.js';

export default class Status extends PodCommand<typeof Status> {
  static override summary = 'Show the node and its pods, like kubectl get pods for this node.';
  static override description = `Without POD: a node summary (node name, runtime name, version and conditions, pod counts by phase, root dir) and a pod table with the columns kubectl prints (NAMESPACE, NAME, READY, STATUS, RESTARTS, AGE, IP). With POD (ns/name, name in namespace default, or a UID prefix): the pod's full status. -o json|yaml prints real v1 Pod objects (a v1 PodList without POD) with .status computed from the runtime as the kubelet computes it. --watch prints again on every change.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1',
    '<%= config.bin %> <%= command.id %> etcd-node1 -o yaml',
    '<%= config.bin %> <%= command.id %> -o json',
    '<%= config.bin %> <%= command.id %> --watch',
  ];
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name (namespace default), or a UID prefix' }) };
  static override flags = {
    ...outputFlags,
    watch: Flags.boolean({ char: 'w', summary: 'Keep watching and print changes.', default: false }),
    interval: Flags.string({ summary: 'How often --watch polls the runtime, as a duration.', default: '1s' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Status);
    const ctx = await this.syncContext();
    const { listPodsWithStatus, runtimeName } = await import('../lib/kuberuntime/pods.js');
    const { formatPodTable, describePod } = await import('../lib/status/format.js');
    const { resolvePodRef } = await import('../lib/pod/ref.js');
    const { parseDuration } = await import('../lib/util/duration.js');
    const { InputError } = await import('../lib/errors.js');
    const intervalMs = parseDuration(flags.interval);
    if (intervalMs === null || intervalMs <= 0) throw new InputError(`--interval "${flags.interval}": not a positive duration`);

    const snapshot = async () => {
      const pods = await listPodsWithStatus(ctx);
      if (args.pod === undefined) return pods;
      const refs = pods.map((p) => ({ namespace: p.metadata?.namespace ?? 'default', name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '', pod: p }));
      return [resolvePodRef(args.pod, refs).pod];
    };

    const render = async (pods: Awaited<ReturnType<typeof snapshot>>, header: boolean) => {
      if (args.pod !== undefined) {
        const pod = pods[0]!;
        await this.printObject(pod, () => describePod(pod));
        return;
      }
      const list = { apiVersion: 'v1', kind: 'PodList', metadata: {}, items: pods };
      await this.printObject(list, () => {
        const table = formatPodTable(pods, new Date());
        return header ? table : table.split('\n').slice(1).join('\n');
      });
    };

    let pods = await snapshot();
    if (args.pod === undefined && this.output === 'table' && !flags.watch) {
      const cri = ctx.cri;
      const v = await cri.version({});
      const st = await cri.status({});
      const conds = (st.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`).join(' ');
      const phases = new Map<string, number>();
      for (const p of pods) phases.set(p.status?.phase ?? 'Unknown', (phases.get(p.status?.phase ?? 'Unknown') ?? 0) + 1);
      const counts = [...phases.entries()].map(([k, n]) => `${n} ${k.toLowerCase()}`).join(', ') || 'none';
      process.stdout.write(
        `Node:     ${this.nodeName()}\n` +
          `Runtime:  ${await runtimeName(cri)} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}) on ${this.flags['container-runtime-endpoint']}  ${conds}\n` +
          `Pods:     ${pods.length} (${counts})\n` +
          `Root dir: ${this.flags['root-dir']}\n\n`,
      );
      if (pods.length === 0) {
        process.stdout.write('No pods on this node.\n');
        return;
      }
    }
    if (!flags.watch) {
      await render(pods, true);
      return;
    }
    // Watch: print the whole set first, then every pod whose status changed.
    const key = (p: (typeof pods)[number]) => JSON.stringify(p.status, jsonReplacer);
    const seen = new Map<string, string>();
    const emit = async (list: typeof pods, first: boolean) => {
      const changed = list.filter((p) => seen.get(p.metadata?.uid ?? '') !== key(p));
      for (const p of list) seen.set(p.metadata?.uid ?? '', key(p));
      if (changed.length === 0) return;
      if (this.output === 'table') await render(changed, first);
      else for (const p of changed) process.stdout.write(JSON.stringify({ type: first ? 'ADDED' : 'MODIFIED', object: p }, jsonReplacer) + '\n');
    };
    await emit(pods, true);
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort());
    process.once('SIGTERM', () => controller.abort());
    while (!controller.signal.aborted) {
      await new Promise((r) => setTimeout(r, intervalMs));
      if (controller.signal.aborted) break;
      pods = await snapshot();
      await emit(pods, false);
    }
  }
}
