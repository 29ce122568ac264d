/**
 * Ginkgo's JSON report (--json-report) to a per-spec table, and the results
 * file test/conformance/results/<date>.json: one row per spec of the set with
 * the verdict of each agent run (passed / failed / skipped / not run, the
 * failure's first line), and per agent the counts, wall time, peak RSS and
 * CPU. A run of one agent keeps the other agent's column of the same date.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export type Agent = 'klet' | 'kubelet';

/** The part of ginkgo's types.Report this reads. */
interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeText?: string;
  LeafNodeType?: string;
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string; FailureNodeType?: string };
  CapturedGinkgoWriterOutput?: string;
}
interface GinkgoReport {
  SpecReports?: GinkgoSpecReport[] | null;
}

export interface SpecVerdict {
  state: string;
  seconds?: number;
  /** The failure message's first line. */
  failure?: string;
  /** A coarse cause read from the whole failure message (see causeOf). */
  cause?: string;
}

/**
 * Causes recognised in a failed spec, first match wins: in the failure
 * message, or (`anywhere`) also in the spec's captured output, whose
 * timeline has the pod's events, or (`inName`) in the spec's full text. Coarse on purpose: it sorts a baseline's
 * failures into piles; the message says the rest.
 */
const SERVER = '(needs the kubelet server)';
const CAUSES: { re: RegExp; cause: string; anywhere?: boolean; inName?: boolean }[] = [
  { re: /RTNETLINK answers: Operation not supported/, cause: 'environment: this kernel has no dummy link type' },
  { re: /line 1: \/file: Read-only file system/, cause: "image: the busybox image's /bin/sh is bash, whose message differs from ash's" },
  { re: /divisor is zero/, anywhere: true, cause: 'downward API resourceFieldRef with the default divisor: "divisor is zero" (the kubelet takes 0 as 1)' },
  { re: /PostStartHook failed: Get "https|https:\/\/\S*msg=prestop"?: fetch failed/, anywhere: true, cause: 'HTTPS lifecycle hook: klet verifies the certificate (the kubelet does not)' },
  { re: /^\[sig-node\] Ephemeral Containers/, inName: true, cause: 'ephemeral containers are not run' },
  { re: /event for wrong-pod-os: .*NodeAffinity/, anywhere: true, cause: 'pod OS mismatch rejected as NodeAffinity, not PodOSNotSupported' },
  { re: /unsafe, but not explicitly enabled sysctls[\s\S]*FailedCreatePodSandBox/, anywhere: true, cause: 'unsafe sysctls not rejected (SysctlForbidden): the sandbox fails instead' },
  { re: /<string>: DONE\\n\s*to equal\s*<string>: DONE/, cause: 'termination message from the log keeps its trailing newline' },
  { re: /failed to get logs|GetPodLogs|failed to get output for container|\/log\?|pods\/log|\(get pods [^)]*\)|:10250\/containerLogs\//, cause: `container logs through the API server ${SERVER}` },
  { re: /Failed to open websocket.*\/log/, cause: `container logs through the API server ${SERVER}` },
  { re: /ExecWithOptions|\/exec\?|unable to upgrade connection|error dialing backend|error sending request/, cause: `exec through the API server ${SERVER}` },
  { re: /:10250\/exec\//, anywhere: true, cause: `exec through the API server ${SERVER}` },
  { re: /:10250\/portForward\/|port-?forward/i, cause: `port-forward ${SERVER}` },
  { re: /Expected\s+<string>: \n\s*to equal/, cause: `empty container output: logs through the API server ${SERVER}` },
];

/** The cause of a failed spec from its full text, failure message and captured output. */
export function causeOf(message: string, output = '', name = ''): string {
  for (const { re, cause, anywhere, inName } of CAUSES) {
    if (inName === true ? re.test(name) : re.test(message) || (anywhere === true && re.test(output))) return cause;
  }
  return 'other';
}

/** ginkgo's FullText(): the container texts and the leaf text joined by spaces. */
function fullText(r: GinkgoSpecReport): string {
  return [...(r.ContainerHierarchyTexts ?? []), r.LeafNodeText ?? ''].filter((s) => s !== '').join(' ');
}

/** The It specs of a JSON report file, by full text. */
export async function readGinkgoReport(file: string): Promise<Map<string, SpecVerdict>> {
  const suites = JSON.parse(await fs.readFile(file, 'utf8')) as GinkgoReport[];
  const out = new Map<string, SpecVerdict>();
  for (const suite of suites) {
    for (const r of suite.SpecReports ?? []) {
      if (r.LeafNodeType !== 'It') continue;
      const v: SpecVerdict = { state: r.State ?? 'unknown' };
      if (typeof r.RunTime === 'number') v.seconds = Math.round(r.RunTime / 1e7) / 100;
      const msg = r.Failure?.Message?.trim();
      if (msg && r.State !== 'passed') {
        v.failure = msg.split('\n')[0]!.slice(0, 400);
        if (r.State !== 'skipped') v.cause = causeOf(msg, r.CapturedGinkgoWriterOutput ?? '', fullText(r));
      }
      out.set(fullText(r), v);
    }
  }
  return out;
}

/** The specs a dry run would run (ginkgo reports them as passed). */
export async function dryRunSpecs(file: string): Promise<string[]> {
  const specs = await readGinkgoReport(file);
  return [...specs].filter(([, v]) => v.state === 'passed').map(([name]) => name).sort();
}

export interface AgentRun {
  date: string;
  procs: number;
  /** The processes the set's [Serial] specs ran with (after the others), when it has any. */
  serialProcs?: number;
  focus?: string;
  /** Seconds the ginkgo run took (the cluster and node set-up excluded). */
  wallSeconds: number;
  passed: number;
  failed: number;
  skipped: number;
  notRun: number;
  /** Peak resident set of the agent's process tree, MiB (sampled every few seconds), and its kernel high-water mark. */
  peakRssMiB?: number;
  vmHwmMiB?: number;
  /** CPU seconds (user + system) the agent used during the ginkgo run. */
  cpuSeconds?: number;
  /** The machine's load average (1, 5, 15 min) when the specs began and when they ended. */
  loadAverage?: { start: number[]; end: number[] };
  /** klet's commit, or the kubelet's version. */
  version?: string;
  /** Why the run ended early, when it did. */
  error?: string;
}

export interface ResultsFile {
  date: string;
  machine: { kernel: string; cpus: number; memoryGiB: number; os: string };
  /** select: a regexp over the full texts narrowing what focus and skip select (a tier's). */
  set: { focus: string; skip: string; select?: string; total: number };
  agents: Partial<Record<Agent, AgentRun>>;
  specs: { name: string; klet?: SpecVerdict; kubelet?: SpecVerdict }[];
}

/** Verdicts of one run over the whole set: a spec of the set the report lacks was not run. */
export function verdictsFor(set: string[], report: Map<string, SpecVerdict>, ran: Set<string>): Map<string, SpecVerdict> {
  const out = new Map<string, SpecVerdict>();
  for (const name of set) {
    if (!ran.has(name)) continue;
    out.set(name, report.get(name) ?? { state: 'not run' });
  }
  return out;
}

export function countVerdicts(v: Map<string, SpecVerdict>): Pick<AgentRun, 'passed' | 'failed' | 'skipped' | 'notRun'> {
  const c = { passed: 0, failed: 0, skipped: 0, notRun: 0 };
  for (const { state } of v.values()) {
    if (state === 'passed') c.passed++;
    else if (state === 'skipped' || state === 'pending') c.skipped++;
    else if (state === 'not run') c.notRun++;
    else c.failed++;
  }
  return c;
}

async function osName(): Promise<string> {
  const text = await fs.readFile('/etc/os-release', 'utf8').catch(() => '');
  return /^PRETTY_NAME="?([^"\n]*)"?/m.exec(text)?.[1] ?? os.platform();
}

/**
 * Merge one agent's run into results/<date>.json (keeping the other agent's
 * column) and write the summary beside it. A run narrowed by --focus goes to
 * results/<date>-focus.json instead, so that it never replaces a whole run's column.
 */
export async function writeResults(
  dir: string,
  o: { agent: Agent; set: string[]; focus: string; skip: string; select?: string; tier?: string; run: AgentRun; verdicts: Map<string, SpecVerdict> },
): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  const day = o.run.date.slice(0, 10);
  const base = [day, o.tier, o.run.focus ? 'focus' : undefined].filter((x) => x !== undefined).join('-');
  const file = path.join(dir, `${base}.json`);
  const prev = JSON.parse(await fs.readFile(file, 'utf8').catch(() => 'null')) as ResultsFile | null;
  const res: ResultsFile = {
    date: day,
    machine: { kernel: os.release(), cpus: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30), os: await osName() },
    set: { focus: o.focus, skip: o.skip, ...(o.select ? { select: o.select } : {}), total: o.set.length },
    agents: { ...(prev?.agents ?? {}), [o.agent]: o.run },
    specs: [],
  };
  const prevSpecs = new Map((prev?.specs ?? []).map((s) => [s.name, s]));
  for (const name of o.set) {
    const row = { ...(prevSpecs.get(name) ?? { name }) };
    const v = o.verdicts.get(name);
    if (v) row[o.agent] = v;
    else delete row[o.agent];
    res.specs.push(row);
  }
  await fs.writeFile(file, JSON.stringify(res, null, 2) + '\n');
  await fs.writeFile(path.join(dir, `${base}.md`), summary(res));
  return file;
}

/** A readable summary: per agent its counts and figures, then every spec either agent did not pass. */
export function summary(res: ResultsFile): string {
  const lines = [`# Node conformance, ${res.date}`, '', `${res.machine.os}, kernel ${res.machine.kernel}, ${res.machine.cpus} CPUs, ${res.machine.memoryGiB} GiB.`, ''];
  lines.push(`Set: ${res.set.total} specs, focus \`${res.set.focus}\`, skip \`${res.set.skip}\`${res.set.select ? `, of those the ones matching \`${res.set.select}\`` : ''}.`, '');
  lines.push('| agent | ran | passed | failed | skipped | not run | wall | procs | peak RSS | CPU | load average (1 5 15 min), start → end | focus |', '|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const [agent, r] of Object.entries(res.agents)) {
    if (!r) continue;
    const ran = r.passed + r.failed + r.skipped + r.notRun;
    lines.push(
      `| ${agent} ${r.version ?? ''} | ${ran} | ${r.passed} | ${r.failed} | ${r.skipped} | ${r.notRun} | ${Math.round(r.wallSeconds)} s | ${r.procs}${r.serialProcs ? ` (Serial: ${r.serialProcs})` : ''} | ` +
        `${r.peakRssMiB ?? '?'} MiB | ${r.cpuSeconds ?? '?'} s | ${r.loadAverage ? `${r.loadAverage.start.join(' ')} → ${r.loadAverage.end.join(' ')}` : '?'} | ${r.focus ? `\`${r.focus}\`` : 'whole set'} |`,
    );
  }
  for (const agent of ['kubelet', 'klet'] as const) {
    const causes = new Map<string, number>();
    for (const s of res.specs) {
      const v = s[agent];
      if (v && v.state !== 'passed' && v.state !== 'skipped') causes.set(v.cause ?? v.state, (causes.get(v.cause ?? v.state) ?? 0) + 1);
    }
    if (causes.size === 0) continue;
    lines.push('', `Failures of ${agent} by cause:`, '');
    for (const [cause, n] of [...causes].sort((a, b) => b[1] - a[1])) lines.push(`- ${n}: ${cause}`);
  }
  lines.push('', '## Specs not passed by an agent', '', '| spec | kubelet | klet |', '|---|---|---|');
  const cell = (v?: SpecVerdict) => (v ? (v.state === 'passed' ? 'passed' : `${v.state}${v.failure ? `: ${v.failure.replace(/\|/g, '\\|')}` : ''}`) : '');
  for (const s of res.specs) {
    if ((s.kubelet && s.kubelet.state !== 'passed') || (s.klet && s.klet.state !== 'passed')) {
      lines.push(`| ${s.name.replace(/\|/g, '\\|')} | ${cell(s.kubelet)} | ${cell(s.klet)} |`);
    }
  }
  return lines.join('\n') + '\n';
}
