import { Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';
import { durationFlag } from '../flags.js';
import { cgroupFlags, reservationFlags } from '../node-flags.js';

export default class RunOnce extends PodCommand<typeof RunOnce> {
  static override summary = 'Start every static pod from a manifest directory once, wait for each, and report.';
  static override description = `What the kubelet's --runonce mode promised: read every static pod from --manifest-dir (and/or --manifest-url), start them all concurrently, and wait per pod by its restart policy: Always pods until Running with every container started and then still running, with no container exit, for the --settle window (--wait ready: until Ready as the kubelet computes it, readiness and startup probes included; a pod whose startup probe exhausts its failureThreshold fails at once with the probe's last message), Never and OnFailure pods until they finish. A container that exits within the settle window fails its pod with the container's reason, exit code and last log lines (a bad flag, a port it cannot bind, an OOM kill); a crash loop (a container that cannot start, StartError, included: it backs off as the kubelet's) or an image that cannot be pulled fails its pod at once; a CreateContainerError fails it when the retry after 10 s gives the same error. The pods' probes run while klet waits (a failed liveness probe restarts its container). Init containers run in order first. Invalid manifests are reported by file, line and field, and never stop the valid pods.

Exit status: 0 only if every Always pod runs and every other pod Succeeded (and no manifest was invalid); otherwise 1, or with --exit-code-from POD that pod's first failing exit code. Pods are left running (as on a node) unless --cleanup; a pod whose manifest changed since an earlier run replaces that run's pod, as the kubelet replaces an edited static pod. A pod that fails (even with a runtime error) fails in its own row, with reason, message and manifest path; the others' results stand. Ctrl-C stops waiting (exit 130) and leaves the pods as they are. No API server is needed.

Pods get the kubelet's pod and QoS cgroups as under klet sync (--cgroups-per-qos, default true): <cgroup-root>/kubepods/{burstable,besteffort}/pod<uid>, Guaranteed pods directly in kubepods, removed with the pod; --cgroups-per-qos=false --enforce-node-allocatable=none keeps the runtime's cgroups.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --manifest-dir examples/',
    '<%= config.bin %> <%= command.id %> --manifest-dir ./manifests --wait ready --timeout 10m',
    '<%= config.bin %> <%= command.id %> --manifest-dir ./manifests --settle 10s',
    '<%= config.bin %> <%= command.id %> --manifest-dir ./jobs --exit-code-from migrate --cleanup -o json',
    "<%= config.bin %> <%= command.id %> --manifest-url https://config.example/pods.yaml --manifest-url-header 'Authorization: Bearer $TOKEN'",
  ];
  static override flags = {
    ...outputFlags,
    'manifest-dir': Flags.string({
      summary:
        "Directory of static pod manifests (read in name order, dot-files skipped), or one manifest file (the kubelet's staticPodPath). Default /etc/kubernetes/manifests unless only --manifest-url is given. Alias: --pod-manifest-path.",
      aliases: ['pod-manifest-path'],
    }),
    'manifest-url': Flags.string({ summary: 'URL serving pod manifests (YAML or JSON, several documents allowed).' }),
    'manifest-url-header': Flags.string({ summary: "HTTP header for --manifest-url, 'Name: value' (repeatable).", multiple: true }),
    objects: Flags.string({ summary: 'Directory of ConfigMap and Secret manifests served to the pods.' }),
    wait: Flags.option({
      summary: 'For restartPolicy Always pods: wait until running (all containers started) or ready.',
      options: ['running', 'ready'] as const,
      default: 'running' as const,
    })(),
    // 3s: a container that cannot start (a bad flag, a port in use, an OOM
    // kill at start-up) exits within about a second of starting; three times
    // that catches it with room on a busy node. All pods settle at once, so
    // a run costs at most 3 s more, after its last pod started.
    settle: durationFlag({
      summary: 'Always pods (--wait running): how long each must keep running with no container exit to count as ok; 0 reports them as soon as they run.',
      default: '3s',
      allowZero: true,
    }),
    timeout: durationFlag({ summary: 'How long to wait for all pods, as a duration.', default: '5m' }),
    'exit-code-from': Flags.string({ summary: "Exit with this pod's first failing container exit code (name, ns/name or the static pod's full name)." }),
    cleanup: Flags.boolean({ summary: 'Delete every pod this run started when done.', default: false }),
    ...cgroupFlags,
    ...reservationFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RunOnce);
    const { runOnceCommand } = await import('../cli/runonce.js');
    const exitCode = await runOnceCommand(flags, { output: this.output, deps: (onEvent) => this.deps(onEvent) });
    if (exitCode !== 0) this.exit(exitCode);
  }
}
