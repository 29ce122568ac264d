import { Flags } from '@oclif/core';
import fs from 'node:fs';
import { PodCommand, outputFlags } from '../base-command.js';
import { InputError } from '../lib/errors.js';
import { parseDuration } from '../lib/util/duration.js';

export default class RunOnce extends PodCommand<typeof RunOnce> {
  static override summary = 'Start every static pod from a manifest directory once, wait for each, and report.';
  static override description = `What the kubelet's --runonce mode promised: read every static pod from --manifest-dir (and/or --manifest-url), start them all concurrently, and wait per pod by its restart policy: Always pods until Running with every container started (--wait ready: until Ready), Never and OnFailure pods until they finish. Init containers run in order first. Invalid manifests are reported by file, line and field, and never stop the valid pods.

Exit status: 0 only if every Always pod runs and every other pod Succeeded (and no manifest was invalid); otherwise 1, or with --exit-code-from POD that pod's first failing exit code. Pods are left running (as on a node) unless --cleanup. No API server is needed.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --manifest-dir examples/',
    '<%= config.bin %> <%= command.id %> --manifest-dir ./manifests --wait ready --timeout 10m',
    '<%= config.bin %> <%= command.id %> --manifest-dir ./jobs --exit-code-from migrate --cleanup -o json',
    "<%= config.bin %> <%= command.id %> --manifest-url https://config.example/pods.yaml --manifest-url-header 'Authorization: Bearer $TOKEN'",
  ];
  static override flags = {
    ...outputFlags,
    'manifest-dir': Flags.string({
      summary: 'Directory of static pod manifests (read in name order, dot-files skipped). Default /etc/kubernetes/manifests unless only --manifest-url is given.',
    }),
    'manifest-url': Flags.string({ summary: 'URL serving pod manifests (YAML or JSON, several documents allowed).' }),
    'manifest-url-header': Flags.string({ summary: "HTTP header for --manifest-url, 'Name: value' (repeatable).", multiple: true }),
    objects: Flags.string({ summary: 'Directory of ConfigMap and Secret manifests served to the pods.' }),
    wait: Flags.option({
      summary: 'For restartPolicy Always pods: wait until running (all containers started) or ready.',
      options: ['running', 'ready'] as const,
      default: 'running' as const,
    })(),
    timeout: Flags.string({ summary: 'How long to wait for all pods, as a duration.', default: '5m' }),
    'exit-code-from': Flags.string({ summary: "Exit with this pod's first failing container exit code (name, ns/name or the static pod's full name)." }),
    cleanup: Flags.boolean({ summary: 'Delete every pod this run started when done.', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RunOnce);
    const timeoutMs = parseDuration(flags.timeout);
    if (timeoutMs === null || timeoutMs <= 0) throw new InputError(`--timeout "${flags.timeout}": not a positive duration (e.g. 5m, 30s)`);
    const dir = flags['manifest-dir'] ?? (flags['manifest-url'] ? undefined : '/etc/kubernetes/manifests');
    if (dir !== undefined && !fs.existsSync(dir)) throw new InputError(`--manifest-dir ${dir}: no such directory`);
    if (dir !== undefined && !fs.statSync(dir).isDirectory()) throw new InputError(`--manifest-dir ${dir}: not a directory`);

    const nodeName = this.nodeName();
    const { loadManifests } = await import('../lib/pod/index.js');
    const { fetchManifestUrl, parseHeaders } = await import('../lib/kuberuntime/manifest-source.js');
    const sets = [];
    if (dir !== undefined) sets.push(await loadManifests({ dir, nodeName }));
    if (flags['manifest-url']) {
      const body = await fetchManifestUrl(flags['manifest-url'], { headers: parseHeaders(flags['manifest-url-header']) });
      sets.push(await loadManifests({ url: { body, url: flags['manifest-url'] }, nodeName }));
    }
    if (flags.objects) sets.push(await loadManifests({ dir: flags.objects, nodeName }));
    const pods = sets.flatMap((s) => s.pods);
    const invalid = sets.flatMap((s) => s.errors).map((e) => ({ file: e.file, line: e.line, fieldPath: e.fieldPath, message: e.message, text: e.toString() }));
    const objects = { configMaps: sets.flatMap((s) => s.configMaps), secrets: sets.flatMap((s) => s.secrets) };

    const exitFrom = flags['exit-code-from'];
    const matches = (p: (typeof pods)[number]) => {
      const md = p.pod.metadata ?? {};
      const short = md.name?.endsWith(`-${nodeName}`) ? md.name.slice(0, -(nodeName.length + 1)) : md.name;
      return exitFrom === md.name || exitFrom === short || exitFrom === `${md.namespace}/${md.name}` || exitFrom === `${md.namespace}/${short}`;
    };
    if (exitFrom !== undefined && !pods.some(matches)) {
      throw new InputError(`--exit-code-from ${exitFrom}: no such pod among the manifests (${pods.map((p) => p.pod.metadata?.name).join(', ') || 'none'})`);
    }

    for (const e of invalid) this.notice(`error: ${e.text}`);
    const { createProgress } = await import('../lib/ui/progress.js');
    const progress = await createProgress({ tty: this.interactive(), json: this.output !== 'table' });
    const ctx = await this.syncContext(objects, (e) => progress.event(e));
    const { admitPod, syncUntil, deletePod, goalFor, preflightPod } = await import('../lib/kuberuntime/pods.js');

    const runnable: typeof pods = [];
    for (const p of pods) {
      const problems = await preflightPod(ctx, p.pod);
      if (problems.length === 0) {
        runnable.push(p);
        continue;
      }
      for (const pr of problems) {
        const text = `${p.source.path}: ${pr.fieldPath}: ${pr.message}`;
        invalid.push({ file: p.source.path, line: undefined, fieldPath: pr.fieldPath, message: pr.message, text });
        this.notice(`error: ${text}`);
      }
    }

    const t0 = Date.now();
    const outcomes = await Promise.all(
      runnable.map(async (p) => {
        const key = `${p.pod.metadata?.namespace}/${p.pod.metadata?.name}`;
        const rec = await admitPod(ctx, p.pod, p.source.path);
        progress.pod(key, {
          initContainers: (p.pod.spec?.initContainers ?? []).map((c) => c.name),
          containers: (p.pod.spec?.containers ?? []).map((c) => c.name),
        });
        const goal = goalFor(p.pod, flags.wait === 'ready');
        const out = await syncUntil(ctx, rec, goal, { timeoutMs: Math.max(1000, timeoutMs - (Date.now() - t0)) });
        progress.done(key, out.ok, out.ok ? `${out.pod.status?.phase}` : out.problem ?? 'failed');
        return { loaded: p, goal, out };
      }),
    );
    await progress.close();

    if (flags.cleanup) {
      await Promise.all(
        outcomes.map(({ loaded }) => {
          const md = loaded.pod.metadata ?? {};
          return deletePod(ctx, { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default', spec: loaded.pod });
        }),
      );
    }

    const ok = invalid.length === 0 && outcomes.every((o) => o.out.ok);
    const report = {
      ok,
      nodeName,
      durationMs: Date.now() - t0,
      pods: outcomes.map(({ loaded, goal, out }) => {
        const st = out.pod.status;
        const containers = [
          ...(st?.initContainerStatuses ?? []).map((c) => ({ ...c, init: true })),
          ...(st?.containerStatuses ?? []).map((c) => ({ ...c, init: false })),
        ];
        return {
          namespace: loaded.pod.metadata?.namespace,
          name: loaded.pod.metadata?.name,
          uid: loaded.pod.metadata?.uid,
          source: loaded.source.path,
          restartPolicy: loaded.pod.spec?.restartPolicy ?? 'Always',
          waitedFor: goal,
          ok: out.ok,
          problem: out.problem ?? null,
          phase: st?.phase,
          podIP: st?.podIP ?? null,
          exitCode: out.exitCode,
          durationMs: out.finishedAt - out.startedAt,
          containers: containers.map((c) => ({
            name: c.name,
            init: c.init,
            state: c.state?.running ? 'running' : c.state?.terminated ? 'terminated' : 'waiting',
            reason: c.state?.waiting?.reason ?? c.state?.terminated?.reason ?? null,
            exitCode: c.state?.terminated?.exitCode ?? null,
            restartCount: c.restartCount,
            startedAt: c.state?.running?.startedAt ?? c.state?.terminated?.startedAt ?? null,
            finishedAt: c.state?.terminated?.finishedAt ?? null,
          })),
        };
      }),
      invalid: invalid.map(({ file, line, fieldPath, message }) => ({ file, line: line ?? null, fieldPath: fieldPath ?? null, message })),
      cleanedUp: flags.cleanup,
    };
    const { formatTable } = await import('../lib/util/table.js');
    await this.printObject(report, () => {
      const rows = report.pods.map((p) => [
        p.namespace ?? '',
        p.name ?? '',
        p.restartPolicy,
        p.ok ? 'ok' : 'FAILED',
        p.phase ?? '',
        p.exitCode === null ? '-' : String(p.exitCode),
        `${(p.durationMs / 1000).toFixed(1)}s`,
        p.problem ?? '',
      ]);
      for (const e of report.invalid) rows.push(['-', e.file, '-', 'INVALID', '-', '-', '-', `${e.fieldPath ? e.fieldPath + ': ' : ''}${e.message}`]);
      const summary = `${report.pods.filter((p) => p.ok).length}/${report.pods.length} pods ok, ${report.invalid.length} invalid, ${(report.durationMs / 1000).toFixed(1)}s`;
      return formatTable(['NAMESPACE', 'NAME', 'RESTART', 'RESULT', 'PHASE', 'EXIT', 'TIME', 'DETAIL'], rows) + '\n' + summary;
    });

    if (exitFrom !== undefined) {
      const target = outcomes.find((o) => matches(o.loaded));
      const code = target ? (target.out.ok ? 0 : target.out.exitCode && target.out.exitCode > 0 ? target.out.exitCode : 1) : 1;
      if (code !== 0) this.exit(code);
      if (!ok) this.exit(1);
      return;
    }
    if (!ok) this.exit(1);
  }
}
