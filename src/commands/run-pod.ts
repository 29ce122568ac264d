import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';
import { InputError } from '../lib/errors.js';
import { parseDuration } from '../lib/util/duration.js';

export default class RunPod extends PodCommand<typeof RunPod> {
  static override summary = 'Run one pod from a manifest on this node and wait for it.';
  static override description = `Syncs one Pod manifest through CRI the way the kubelet does: sandbox (with the pod's network, DNS, ports, log directory /var/log/pods/<ns>_<name>_<uid>), images by pull policy, init containers in order, then the containers, with the kubelet's CRI labels so crictl shows the same pods. The pod is named and given a UID as the kubelet does for static pods (<name>-<node-name>). ConfigMaps and Secrets in the same file or in --objects are served to the pod's env and volumes (klet's standalone extension).

The pod keeps running after klet exits, unless --rm. With --rm (and --wait completed, the default then) klet deletes the pod when it ends and exits with the first failing container's exit code.`;
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
      summary: 'What to wait for: running (all containers started), ready, completed, or none. Default: running, or completed with --rm.',
      options: ['running', 'ready', 'completed', 'none'] as const,
    })(),
    timeout: Flags.string({ summary: 'How long to wait, as a duration.', default: '5m' }),
    rm: Flags.boolean({ summary: 'Delete the pod when it has finished (or failed to start).', default: false }),
    objects: Flags.string({ summary: 'Directory of ConfigMap and Secret manifests for the pod.' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(RunPod);
    const timeoutMs = parseDuration(flags.timeout);
    if (timeoutMs === null || timeoutMs <= 0) throw new InputError(`--timeout "${flags.timeout}": not a positive duration (e.g. 5m, 30s)`);
    const goal = flags.wait ?? (flags.rm ? 'completed' : 'running');

    const { loadManifests, manifestErrorsToError } = await import('../lib/pod/index.js');
    const set = await loadManifests({ files: [args.file], nodeName: this.nodeName() });
    if (set.errors.length > 0) throw manifestErrorsToError(set.errors);
    if (set.pods.length !== 1) {
      throw new InputError(`${args.file}: expected exactly one Pod, found ${set.pods.length}`);
    }
    let objects = { configMaps: set.configMaps, secrets: set.secrets };
    if (flags.objects) {
      const extra = await loadManifests({ dir: flags.objects, nodeName: this.nodeName() });
      if (extra.errors.length > 0) throw manifestErrorsToError(extra.errors);
      objects = { configMaps: [...objects.configMaps, ...extra.configMaps], secrets: [...objects.secrets, ...extra.secrets] };
    }
    const loaded = set.pods[0]!;
    const pod = loaded.pod;
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;

    const { createProgress } = await import('../lib/ui/progress.js');
    const progress = await createProgress({ tty: this.interactive(), json: this.output !== 'table' });
    const ctx = await this.syncContext(objects, (e) => progress.event(e));
    const { admitPod, syncUntil, deletePod, preflightPod } = await import('../lib/kuberuntime/pods.js');
    const problems = await preflightPod(ctx, pod);
    if (problems.length > 0) {
      const p = problems[0]!;
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
      // The file as the user named it, like the manifest errors above.
      throw new InputError(`${args.file}: ${p.fieldPath}: ${p.message}${more}`);
    }
    const rec = await admitPod(ctx, pod, loaded.source.path);
    progress.pod(key, {
      initContainers: (pod.spec?.initContainers ?? []).map((c) => c.name),
      containers: (pod.spec?.containers ?? []).map((c) => c.name),
    });
    let outcome;
    try {
      outcome = await syncUntil(ctx, rec, goal, { timeoutMs });
      progress.done(key, outcome.ok, outcome.ok ? `${outcome.pod.status?.phase}` : outcome.problem ?? 'failed');
    } finally {
      await progress.close();
    }
    if (flags.rm) {
      await deletePod(ctx, {
        uid: pod.metadata?.uid ?? '',
        name: pod.metadata?.name ?? '',
        namespace: pod.metadata?.namespace ?? 'default',
        spec: pod,
      });
    }
    const { formatPodTable } = await import('../lib/status/format.js');
    await this.printObject(outcome.pod, () => formatPodTable([outcome.pod], new Date()));
    if (!outcome.ok) {
      this.notice(`error: pod ${key}: ${outcome.problem}`);
      this.exit(outcome.exitCode !== null && outcome.exitCode > 0 ? outcome.exitCode : 1);
    }
  }
}
