/**
 * `klet runonce`: what the kubelet's --runonce mode promised. Load every
 * static pod of the sources, start them all concurrently, wait per pod by
 * its restart policy, optionally clean up, and report with an exit code.
 * A pod whose run fails (even with a runtime error) fails in its own row;
 * the others' results stand.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { fetchManifestUrl } from '../config/manifest-url.js';
import { InputError } from '../errors.js';
import type { LocalObjects } from '../kuberuntime/env.js';
import { batchAdmissionKeys } from '../kuberuntime/admission.js';
import { admitPod, deletePod, replaceOtherInstances } from '../kuberuntime/lifecycle.js';
import { instanceSelector } from '../kuberuntime/labels.js';
import { listPodRecords } from '../kuberuntime/poddir.js';
import { getRuntimePodStatuses, type RuntimePodStatus } from '../kuberuntime/runtime-status.js';
import { loadManifests, type LoadedPod, type ManifestSet } from '../pod/index.js';
import { podKey } from '../pod/key.js';
import { matchesStaticPodRef } from '../pod/ref.js';
import { syncContext, type ServiceDeps } from './deps.js';
import { preflightPod } from './preflight.js';
import { failedOutcome, goalFor, podExitCode, syncUntil, type PodOutcome, type WaitGoal } from './wait.js';

export interface RunOnceOptions {
  manifestDir?: string;
  manifestUrl?: string;
  manifestUrlHeaders?: Record<string, string>;
  /** A directory of ConfigMaps and Secrets served to the pods. */
  objectsDir?: string;
  /** Always pods: wait until Ready rather than running. */
  waitReady: boolean;
  /**
   * Always pods waited for until running: how long (ms) they must then keep
   * running with no container exit to count as ok; 0 reports them at once.
   */
  settleMs?: number;
  timeoutMs: number;
  /** Exit with this pod's exit code: its name, ns/name, or the static pod's full name. */
  exitCodeFrom?: string;
  /** Delete every pod this run started when done. */
  cleanup: boolean;
}

export interface RunOnceContainerRow {
  name: string | undefined;
  init: boolean;
  state: 'running' | 'terminated' | 'waiting';
  reason: string | null;
  exitCode: number | null;
  restartCount: number | undefined;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface RunOncePodRow {
  namespace: string | undefined;
  name: string | undefined;
  uid: string | undefined;
  source: string;
  restartPolicy: string;
  waitedFor: WaitGoal;
  ok: boolean;
  problem: string | null;
  /** Why the pod failed (a waiting reason, PodFailed, Timeout, a runtime error's code), null when ok. */
  reason: string | null;
  message: string | null;
  phase: string | undefined;
  podIP: string | null;
  /** The pod's exit code: its first failing container's, 0 when all ended with 0, null while running. */
  exitCode: number | null;
  durationMs: number;
  containers: RunOnceContainerRow[];
  /** The last log lines of the container whose exit failed the pod in its settle window; empty otherwise. */
  logTail: string[];
}

export interface InvalidManifest {
  file: string;
  line: number | null;
  fieldPath: string | null;
  message: string;
}

/** What runonce prints (table, JSON, YAML). */
export interface RunOnceReport {
  ok: boolean;
  nodeName: string;
  durationMs: number;
  pods: RunOncePodRow[];
  invalid: InvalidManifest[];
  cleanedUp: boolean;
}

export interface RunOnceResult {
  report: RunOnceReport;
  /** What klet exits with. */
  exitCode: number;
}

/**
 * Exit status: 0 only if every pod reached its goal and no manifest was
 * invalid; otherwise 1. With exitCodeFrom, that pod's failure decides first:
 * its first failing exit code (1 when it has none), then 1 if anything else failed.
 */
export function runOnceExitCode(ok: boolean, target: { ok: boolean; exitCode: number | null } | undefined, exitCodeFrom: boolean): number {
  if (exitCodeFrom) {
    const code = target ? (target.ok ? 0 : target.exitCode && target.exitCode > 0 ? target.exitCode : 1) : 1;
    if (code !== 0) return code;
  }
  return ok ? 0 : 1;
}

export async function runOnce(opts: RunOnceOptions, deps: ServiceDeps): Promise<RunOnceResult> {
  const { nodeName } = deps;
  const sets: ManifestSet[] = [];
  if (opts.manifestDir !== undefined) sets.push(await loadManifests({ dir: opts.manifestDir, nodeName }));
  if (opts.manifestUrl !== undefined) {
    const body = await fetchManifestUrl(opts.manifestUrl, { headers: opts.manifestUrlHeaders, signal: deps.signal });
    sets.push(await loadManifests({ url: { body, url: opts.manifestUrl }, nodeName }));
  }
  if (opts.objectsDir !== undefined) sets.push(await loadManifests({ dir: opts.objectsDir, nodeName }));
  const pods = sets.flatMap((s) => s.pods);
  const invalid = sets.flatMap((s) => s.errors).map((e) => ({ file: e.file, line: e.line, fieldPath: e.fieldPath, message: e.message, text: e.toString() }));
  const objects: LocalObjects = { configMaps: sets.flatMap((s) => s.configMaps), secrets: sets.flatMap((s) => s.secrets) };

  const exitFrom = opts.exitCodeFrom;
  const isTarget = (p: LoadedPod) => exitFrom !== undefined && matchesStaticPodRef(exitFrom, p.pod, nodeName);
  if (exitFrom !== undefined && !pods.some(isTarget)) {
    throw new InputError(`${exitFrom}: no such pod among the manifests (${pods.map((p) => p.pod.metadata?.name).join(', ') || 'none'})`, {
      input: 'exitCodeFrom',
    });
  }

  for (const e of invalid) deps.onEvent?.({ kind: 'SourceError', source: e.file, message: e.text });
  const ctx = syncContext(deps, objects);
  const runnable: LoadedPod[] = [];
  // A pod whose checks could not even run (a runtime error) fails in its own row.
  const failedEarly: { loaded: LoadedPod; goal: WaitGoal; out: PodOutcome }[] = [];
  for (const p of pods) {
    let problems: Awaited<ReturnType<typeof preflightPod>>;
    const startedAt = Date.now();
    try {
      problems = await preflightPod(ctx, p.pod);
    } catch (err) {
      if (deps.signal.aborted) throw err;
      failedEarly.push({ loaded: p, goal: goalFor(p.pod, opts.waitReady), out: failedOutcome(p.pod, err, startedAt) });
      continue;
    }
    if (problems.length === 0) {
      runnable.push(p);
      continue;
    }
    for (const pr of problems) {
      const text = `${p.source.path}: ${pr.fieldPath}: ${pr.message}`;
      invalid.push({ file: p.source.path, line: undefined, fieldPath: pr.fieldPath, message: pr.message, text });
      deps.onEvent?.({ kind: 'SourceError', source: p.source.path, message: text });
    }
  }

  const t0 = Date.now();
  // Read once for all pods what each pod's start would otherwise read for
  // itself: the pod records under the root dir (for replaceOtherInstances
  // and each pod's admission) and the runtime's objects of this klet (one
  // list of each kind rather than two filtered lists per pod, 60 calls for
  // 30 pods). Nothing of this run exists yet, so what is read is what each
  // pod would have read. If the runtime cannot be listed, every pod fails in
  // its own row with that error where its own list would have failed (after
  // its admission), as before, without waiting out the runtime's deadline a
  // second time. The runtime's answer is needed only by each pod's first
  // sync: the admissions (the records' files) are written while the lists
  // are in flight. (With no pod to start, the runtime is not contacted:
  // nothing is started for bad input.)
  let listError: unknown;
  const initialRead: Promise<Map<string, RuntimePodStatus>> =
    runnable.length === 0
      ? Promise.resolve(new Map())
      : getRuntimePodStatuses(ctx.cri, runnable.map((p) => podIdentity(p.pod)), { signal: ctx.signal, owner: instanceSelector(ctx) }).catch((err: unknown) => {
          if (deps.signal.aborted) throw err;
          listError = err;
          return new Map<string, RuntimePodStatus>();
        });
  // Only an abort rejects it, and every pod awaits it below; until then it must not count as unhandled.
  initialRead.catch(() => undefined);
  const records = await listPodRecords(ctx.rootDir, ctx.nodeName);
  const recordOf = new Map(records.map((r) => [r.pod.metadata?.uid ?? '', r]));
  // One batch, admitted in the kubelet's order (creation time, then source
  // order) whichever pod's start runs first: a host port two pods ask for
  // goes to the same one every time.
  const admission = batchAdmissionKeys(runnable.map((p) => p.pod));
  const started = await Promise.all(
    runnable.map(async (p) => {
      const key = podKey(p.pod);
      const uid = p.pod.metadata?.uid ?? '';
      const goal = goalFor(p.pod, opts.waitReady);
      const startedAt = Date.now();
      let out: PodOutcome;
      try {
        // A static pod's full name is unique on the node: an edited manifest's pod replaces the old one.
        await replaceOtherInstances(ctx, p.pod, records);
        const rec = await admitPod(ctx, p.pod, p.source.path, recordOf.get(uid) ?? null, admission.get(uid));
        deps.onEvent?.({
          kind: 'PodWaitStarted',
          pod: key,
          uid,
          goal,
          initContainers: (p.pod.spec?.initContainers ?? []).map((c) => c.name),
          containers: (p.pod.spec?.containers ?? []).map((c) => c.name),
        });
        const initial = await initialRead;
        if (listError !== undefined) throw listError;
        out = await syncUntil(ctx, rec, goal, {
          timeoutMs: Math.max(1000, opts.timeoutMs - (Date.now() - t0)),
          initialStatus: initial.get(uid),
          settleMs: opts.settleMs,
        });
      } catch (err) {
        if (deps.signal.aborted) throw err;
        out = failedOutcome(p.pod, err, startedAt);
      }
      deps.onEvent?.({ kind: 'PodWaitDone', pod: key, uid, ok: out.ok, summary: out.ok ? `${out.pod.status?.phase}` : out.problem ?? 'failed' });
      return { loaded: p, goal, out };
    }),
  );
  const outcomes = [...failedEarly, ...started];

  if (opts.cleanup) await Promise.all(outcomes.map(({ loaded }) => deletePod(ctx, loaded.pod)));

  const ok = invalid.length === 0 && outcomes.every((o) => o.out.ok);
  const report: RunOnceReport = {
    ok,
    nodeName,
    durationMs: Date.now() - t0,
    pods: outcomes.map(({ loaded, goal, out }) => podRow(loaded, goal, out)),
    invalid: invalid.map(({ file, line, fieldPath, message }) => ({ file, line: line ?? null, fieldPath: fieldPath ?? null, message })),
    cleanedUp: opts.cleanup,
  };
  const target = exitFrom === undefined ? undefined : outcomes.find((o) => isTarget(o.loaded))?.out;
  return { report, exitCode: runOnceExitCode(ok, target, exitFrom !== undefined) };
}

function podIdentity(pod: V1Pod): { uid: string; name: string; namespace: string } {
  const md = pod.metadata ?? {};
  return { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? 'default' };
}

function podRow(loaded: LoadedPod, goal: WaitGoal, out: PodOutcome): RunOncePodRow {
  const st = out.pod.status;
  const containers = [
    ...(st?.initContainerStatuses ?? []).map((c) => ({ ...c, init: true })),
    ...(st?.containerStatuses ?? []).map((c) => ({ ...c, init: false })),
  ];
  const pod: V1Pod = loaded.pod;
  return {
    namespace: pod.metadata?.namespace,
    name: pod.metadata?.name,
    uid: pod.metadata?.uid,
    source: loaded.source.path,
    restartPolicy: pod.spec?.restartPolicy ?? 'Always',
    waitedFor: goal,
    ok: out.ok,
    problem: out.problem ?? null,
    reason: out.ok ? null : (out.reason ?? null),
    message: out.ok ? null : (out.message ?? null),
    phase: st?.phase,
    podIP: st?.podIP ?? null,
    exitCode: podExitCode(out.pod),
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
    logTail: out.logTail ?? [],
  };
}

/** The report as a table, with a one-line summary. */
export function formatRunOnceReport(report: RunOnceReport, formatTable: (head: string[], rows: string[][]) => string): string {
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
  // The log of a container that exited in its settle window, under the table: why it exited is usually there.
  const logs = report.pods
    .filter((p) => p.logTail.length > 0)
    .map((p) => `\n${p.namespace ?? 'default'}/${p.name ?? ''}: last ${p.logTail.length} log lines:\n${p.logTail.map((l) => `  ${l}`).join('\n')}`);
  return `${formatTable(['NAMESPACE', 'NAME', 'RESTART', 'RESULT', 'PHASE', 'EXIT', 'TIME', 'DETAIL'], rows)}${logs.join('\n')}\n${logs.length > 0 ? '\n' : ''}${summary}`;
}
