import { Args, Flags } from '@oclif/core';
import type { V1Pod } from '@kubernetes/client-node';
import { PodCommand, outputFlags, jsonReplacer } from '../base-command.js';
import { durationFlag } from '../flags.js';

export default class Status extends PodCommand<typeof Status> {
  static override summary = 'Show the node and its pods, like kubectl get pods for this node.';
  static override description = `Without POD: a node summary (node name, runtime name, version and conditions, pod counts by phase, root dir) and a pod table with the columns kubectl prints (NAMESPACE, NAME, READY, STATUS, RESTARTS, AGE, IP). With POD (ns/name, name in namespace default, or a UID prefix): the pod's full status. While klet sync --kubeconfig runs on the root dir, the summary also shows the cluster it joined (API server, registration, lease age, pod watch, events sent, last API error) from its local API. -o json|yaml prints real v1 Pod objects (a v1 PodList without POD, with a top-level "cluster" object in cluster mode) with .status computed from the runtime as the kubelet computes it. --watch prints again on every change. Pods klet ran from the same root dir for another --node-name are not this node's and are not listed: a line on stderr says how many, and for which node.`;
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
    interval: durationFlag({ summary: 'How often --watch polls the runtime, as a duration.', default: '1s' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Status);
    const deps = await this.deps();
    const { podStatus, watchPods, nodeSummary, runningClusterStatus, otherNodePods, readinessNotes } = await import('../lib/services/pod-status.js');
    const { formatPodTable, describePod, formatNodeSummary } = await import('../lib/status/format.js');

    const render = async (pods: V1Pod[], header: boolean) => {
      if (args.pod !== undefined) {
        const pod = pods[0]!;
        await this.printObject(pod, () => describePod(pod));
        return;
      }
      // In cluster mode -o json/yaml also carries the cluster klet sync joined (an extra top-level field).
      const cluster = this.output === 'table' ? undefined : await runningClusterStatus(deps);
      const list = { apiVersion: 'v1', kind: 'PodList', metadata: {}, items: pods, ...(cluster ? { cluster } : {}) };
      await this.printObject(list, () => {
        const table = formatPodTable(pods, new Date());
        return header ? table : table.split('\n').slice(1).join('\n');
      });
    };

    // Pods another --node-name ran from this root dir are not this node's: say where they are
    // (for one POD, its not-found error says it when it is one of them).
    for (const [node, n] of args.pod === undefined ? await otherNodePods(deps) : []) {
      process.stderr.write(
        `klet status: ${n} pod${n === 1 ? '' : 's'} under --root-dir ${this.flags['root-dir']} ${n === 1 ? 'was' : 'were'} run for node ${JSON.stringify(node)}, not ${JSON.stringify(deps.nodeName)}: pass --node-name ${node} to see ${n === 1 ? 'it' : 'them'}\n`,
      );
    }
    if (flags.watch) {
      // The whole set first, then every pod whose status changed, until Ctrl-C.
      for await (const ev of watchPods({ pod: args.pod, intervalMs: flags.interval }, deps)) {
        if (this.output === 'table') await render(ev.pods, ev.type === 'ADDED');
        else for (const p of ev.pods) process.stdout.write(JSON.stringify({ type: ev.type, object: p }, jsonReplacer) + '\n');
      }
      return;
    }
    const pods = await podStatus({ pod: args.pod }, deps);
    if (args.pod === undefined && this.output === 'table') {
      const summary = await nodeSummary(pods, deps);
      process.stdout.write(formatNodeSummary(summary, { endpoint: this.flags['container-runtime-endpoint'], rootDir: this.flags['root-dir'], pods: pods.length }));
      if (pods.length === 0) {
        process.stdout.write('No pods on this node.\n');
        return;
      }
    }
    await render(pods, true);
    if (args.pod === undefined && this.output === 'table') {
      // Nothing probes without a sync: READY is the last result, not a current one.
      const notes = await readinessNotes(pods, deps);
      if (notes.length > 0) {
        process.stderr.write(
          `klet status: no klet sync runs on --root-dir ${this.flags['root-dir']}, so nothing probes readiness; READY shows the last result:\n` +
            notes.map((n) => `  ${n}\n`).join('') +
            '  (klet probe POD --type readiness runs a probe once; klet sync keeps probing)\n',
        );
      }
    }
  }
}
