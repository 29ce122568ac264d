import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';
import { durationFlag } from '../flags.js';
import { cgroupFlags, reservationFlags } from '../node-flags.js';

export default class RunPod extends PodCommand<typeof RunPod> {
  static override summary = 'Run one pod from a manifest on this node and wait for it.';
  static override description = `Syncs one Pod manifest through CRI the way the kubelet does: sandbox (with the pod's network, DNS, ports, log directory /var/log/pods/<ns>_<name>_<uid>), images by pull policy, init containers in order, then the containers, with the kubelet's CRI labels so crictl shows the same pods. The pod is named and given a UID as the kubelet does for static pods (<name>-<node-name>). ConfigMaps and Secrets in the same file or in --objects are served to the pod's env and volumes (klet's standalone extension).

The pod keeps running after klet exits, unless --rm. With --rm (and --wait completed, the default then) the run is fresh and docker-run-like: a finished pod of the same manifest is replaced, the pod's output (its containers' logs) is printed on stdout (with -o json|yaml: the pod), the pod is deleted when it ends, and klet exits with the first failing container's exit code. Ctrl-C stops waiting (exit 130) and leaves the pod as it is.

The pod gets the kubelet's pod and QoS cgroups as under klet sync (--cgroups-per-qos, default true): <cgroup-root>/kubepods/{burstable,besteffort}/pod<uid>, Guaranteed pods directly in kubepods, removed with the pod; --cgroups-per-qos=false --enforce-node-allocatable=none keeps the runtime's cgroups.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> examples/web.yaml',
    '<%= config.bin %> <%= command.id %> examples/web.yaml --wait ready --timeout 2m',
    '<%= config.bin %> <%= command.id %> examples/job.yaml --rm',
    '<%= config.bin %> <%= command.id %> pod.yaml --objects ./config/ -o json',
  ];
  static override args = {
    file: Args.string({ description: 'Pod manifest (YAML or JSON); it may also hold ConfigMaps and Secrets', required: true }),
  };
  static override flags = {
    ...outputFlags,
    wait: Flags.option({
      summary: "What to wait for: running (all containers started), ready (the Ready condition, readiness and startup probes included; a startup probe that gives up fails at once), completed, or none. Default: running, or completed with --rm.",
      options: ['running', 'ready', 'completed', 'none'] as const,
    })(),
    timeout: durationFlag({ summary: 'How long to wait, as a duration.', default: '5m' }),
    rm: Flags.boolean({ summary: 'Delete the pod when it has finished (or failed to start).', default: false }),
    objects: Flags.string({ summary: 'Directory of ConfigMap and Secret manifests for the pod.' }),
    ...cgroupFlags,
    ...reservationFlags,
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(RunPod);
    // The pod and QoS cgroups, as klet sync makes them.
    const { openCommandCgroups } = await import('../cli/cgroups.js');
    const cgroups = await openCommandCgroups(flags, await this.deps());
    const { createProgress } = await import('../ui/progress.js');
    const progress = await createProgress({ tty: this.interactive(), json: this.output !== 'table' });
    const deps = { ...(await this.deps((e) => progress.event(e))), ...(cgroups ? { cgroups } : {}) };
    const { runPod } = await import('../lib/services/run-pod.js');
    const goal = flags.wait ?? (flags.rm ? 'completed' : 'running');
    const result = await runPod({ file: args.file, objectsDir: flags.objects, goal, timeoutMs: flags.timeout, rm: flags.rm }, deps).finally(() => progress.close());
    if (result.output !== undefined && this.output === 'table') {
      // --rm runs like `docker run --rm`: the pod's output is the result.
      process.stdout.write(result.output);
    } else {
      const { formatPodTable } = await import('../lib/status/format.js');
      await this.printObject(result.pod, () => formatPodTable([result.pod], new Date()));
    }
    if (!result.ok) {
      this.notice(`error: pod ${result.key}: ${result.problem}`);
      this.exit(result.exitCode);
    }
  }
}
