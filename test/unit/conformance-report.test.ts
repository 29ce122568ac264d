/**
 * The conformance harness's results (test/conformance/report.ts): a ginkgo
 * JSON report becomes one verdict per spec of the set (It nodes only, the
 * failure's first line, a cause), counts per agent, and results/<date>.json
 * keeps the other agent's column when one agent's run is written.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  causeOf,
  countVerdicts,
  dryRunSpecs,
  readGinkgoReport,
  verdictsFor,
  writeResults,
  type AgentRun,
  type ResultsFile,
} from '../../test/conformance/report.js';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'klet-conformance-report-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const spec = (containers: string[], leaf: string, state: string, message?: string) => ({
  ContainerHierarchyTexts: containers,
  LeafNodeText: leaf,
  LeafNodeType: 'It',
  State: state,
  RunTime: 2_500_000_000,
  ...(message ? { Failure: { Message: message } } : {}),
});

async function report(specs: unknown[]): Promise<string> {
  const file = path.join(dir, `report-${Math.random()}.json`);
  await fs.writeFile(file, JSON.stringify([{ SpecReports: [{ LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed' }, ...specs] }]));
  return file;
}

const A = '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]';
const B = '[sig-storage] Downward API volume should provide podname only [NodeConformance] [Conformance]';
const C = '[sig-node] Container Runtime blackbox test should report termination message [NodeConformance]';

function run(over: Partial<AgentRun> = {}): AgentRun {
  return { date: '2026-11-27T15:00:00.000Z', procs: 6, wallSeconds: 600, passed: 0, failed: 0, skipped: 0, notRun: 0, ...over };
}

describe('conformance results', () => {
  it('reads It specs by full text with state, seconds, first line of the failure and its cause', async () => {
    const v = await readGinkgoReport(
      await report([
        spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance] [Conformance]', 'passed'),
        spec(['[sig-storage] Downward API volume'], 'should provide podname only [NodeConformance] [Conformance]', 'failed', 'failed to get logs from pod-x for c: an error on the server ("unknown")\nmore'),
      ]),
    );
    expect([...v.keys()]).toEqual([A, B]);
    expect(v.get(A)).toEqual({ state: 'passed', seconds: 2.5 });
    expect(v.get(B)).toEqual({
      state: 'failed',
      seconds: 2.5,
      failure: 'failed to get logs from pod-x for c: an error on the server ("unknown")',
      cause: 'container logs through the API server (needs the kubelet server)',
    });
  });

  it('lists the specs a dry run would run', async () => {
    const file = await report([spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance] [Conformance]', 'passed'), spec(['x'], 'y', 'skipped')]);
    expect(await dryRunSpecs(file)).toEqual([A]);
  });

  it('sorts failures into causes, other when none is recognised', () => {
    expect(causeOf('Timed out after 30s.\nExpected\n    <string>: \nto equal\n    <string>: Hello World\\n')).toMatch(/empty container output/);
    expect(causeOf('unable to upgrade connection: pod does not exist')).toMatch(/^exec/);
    expect(causeOf('Expected\n    <string>: DONE\\n\nto equal\n    <string>: DONE')).toMatch(/trailing newline/);
    expect(causeOf('timed out waiting for the condition')).toBe('other');
    expect(causeOf('cmd [ip link add dummy1 type dummy], stdout "", stderr "ip: RTNETLINK answers: Operation not supported"')).toMatch(/^environment/);
    // bash's message as the actual value is the image's doing; an empty actual value is the logs request failing.
    expect(causeOf('Expected\n    <string>: /bin/sh: line 1: /file: Read-only file system\\n\nto equal\n    <string>: /bin/sh: can\'t create /file: Read-only file system\\n')).toMatch(/^image/);
    expect(causeOf('Expected\n    <string>: \nto equal\n    <string>: /bin/sh: can\'t create /file: Read-only file system\\n')).toMatch(/^empty container output/);
    // The pod's events are in the captured output, not in the message.
    const events = 'event for pod-x: {kubelet node} FailedMount: MountVolume.SetUp failed for volume "podinfo" : resourceFieldRef limits.cpu: divisor is zero';
    expect(causeOf('expected pod "pod-x" success: Timed out after 300.000s.', events)).toMatch(/divisor/);
    // The dump after any failure dials the node's port: that alone is no cause.
    expect(causeOf('Timed out after 60s.', 'Unable to retrieve kubelet pods for node n: dial tcp 10.92.0.2:10250: connect: connection refused')).toBe('other');
    expect(causeOf('Timed out after 60s.', '', '[sig-node] Ephemeral Containers [NodeConformance] will start an ephemeral container')).toMatch(/ephemeral/);
  });

  it('counts a spec of the run that the report lacks as not run, and leaves out specs outside the run', () => {
    const v = verdictsFor([A, B, C], new Map([[A, { state: 'passed' }], [B, { state: 'failed' }]]), new Set([A, B, C]));
    expect(v.get(C)).toEqual({ state: 'not run' });
    expect(countVerdicts(v)).toEqual({ passed: 1, failed: 1, skipped: 0, notRun: 1 });
    expect([...verdictsFor([A, B, C], new Map(), new Set([A])).keys()]).toEqual([A]);
  });

  it("writes one agent's column and keeps the other's", async () => {
    const set = [A, B];
    await writeResults(dir, { agent: 'kubelet', set, focus: 'F', skip: 'S', run: run({ passed: 2 }), verdicts: new Map([[A, { state: 'passed' }], [B, { state: 'passed' }]]) });
    const file = await writeResults(dir, {
      agent: 'klet',
      set,
      focus: 'F',
      skip: 'S',
      run: run({ passed: 1, failed: 1 }),
      verdicts: new Map([[A, { state: 'passed' }], [B, { state: 'failed', failure: 'boom | bang', cause: 'other' }]]),
    });
    expect(path.basename(file)).toBe('2026-11-27.json');
    const res = JSON.parse(await fs.readFile(file, 'utf8')) as ResultsFile;
    expect(Object.keys(res.agents).sort()).toEqual(['klet', 'kubelet']);
    expect(res.set).toEqual({ focus: 'F', skip: 'S', total: 2 });
    expect(res.specs).toEqual([
      { name: A, kubelet: { state: 'passed' }, klet: { state: 'passed' } },
      { name: B, kubelet: { state: 'passed' }, klet: { state: 'failed', failure: 'boom | bang', cause: 'other' } },
    ]);
    const md = await fs.readFile(path.join(dir, '2026-11-27.md'), 'utf8');
    expect(md).toContain('- 1: other');
    expect(md).toContain(`| ${B} | passed | failed: boom \\| bang |`);
    expect(md).not.toContain(`| ${A} |`);
    // A run narrowed by --focus goes beside it and leaves the whole runs' file alone.
    const focused = await writeResults(dir, { agent: 'klet', set, focus: 'F', skip: 'S', run: run({ focus: 'host IP', passed: 1 }), verdicts: new Map([[A, { state: 'passed' }]]) });
    expect(path.basename(focused)).toBe('2026-11-27-focus.json');
    expect((JSON.parse(await fs.readFile(file, 'utf8')) as ResultsFile).agents.klet?.failed).toBe(1);
  });
});
