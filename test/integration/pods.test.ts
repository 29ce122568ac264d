/**
 * The pod lifecycle commands end to end: the built CLI (`run-pod`,
 * `runonce`, `status`, `logs`, `delete`) against a private containerd,
 * checked both through klet's own output and behind its back, through CRI
 * (labels, annotations, log paths, exec) and the file system (pod dirs
 * under <root>/pods, log dirs under /var/log/pods).
 *
 * One runtime for the file. Every test starts from an empty node and
 * leaves one: afterEach deletes whatever a failed test left and then
 * asserts that no sandbox, container or pod dir is left.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient, PodSandboxState } from '../../src/lib/cri/index.js';
import { KLET_INSTANCE_LABEL, kletInstance } from '../../src/lib/kuberuntime/labels.js';
import { PROJECT_ROOT, explain, nonEmptyLines, runKlet, type CliResult } from '../helpers/cli.js';
import { removeAllPods, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

const NODE = 'testnode';
const LOG_ROOT = '/var/log/pods';
const UID_LABEL = 'io.kubernetes.pod.uid';

let rt: TestRuntime;
let cri: CriClient;
/** Manifests live here, outside the runtime's root dir. */
let manifests: string;

/** `klet ARGS...` against this file's runtime and root dir, as node "testnode". */
function klet(args: string[], timeoutMs = 90_000): Promise<CliResult> {
  return runKlet([...args, '--root-dir', rt.rootDir, '--container-runtime-endpoint', rt.endpoint, '--node-name', NODE], { timeoutMs });
}

/** `klet ARGS... -o json`, parsed (stdout must be JSON whatever the exit code). */
async function kletJson<T>(args: string[], timeoutMs?: number): Promise<{ r: CliResult; json: T }> {
  const r = await klet([...args, '-o', 'json'], timeoutMs);
  try {
    return { r, json: JSON.parse(r.stdout) as T };
  } catch {
    throw new Error(`klet ${args.join(' ')} -o json did not print JSON: ${explain(r)}`);
  }
}

/** Write a manifest into the temp dir (or a subdir of it) and return its absolute path. */
function manifest(name: string, text: string, dir = manifests): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

/** A one-container pod manifest running `script` in busybox. */
function simplePod(name: string, script: string, extra: { restartPolicy?: string; grace?: number; namespace?: string } = {}): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    ...(extra.namespace ? [`  namespace: ${extra.namespace}`] : []),
    'spec:',
    ...(extra.restartPolicy ? [`  restartPolicy: ${extra.restartPolicy}`] : []),
    ...(extra.grace !== undefined ? [`  terminationGracePeriodSeconds: ${extra.grace}`] : []),
    '  containers:',
    '    - name: c',
    `      image: ${rt.images.busybox}`,
    `      command: ["sh", "-c", ${JSON.stringify(script)}]`,
    '',
  ].join('\n');
}

/** PID 1 has no default SIGTERM action: trap it so the container stops promptly. */
const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 2147483647 & wait";

function expectOk(r: CliResult): void {
  expect(r.code, explain(r)).toBe(0);
}

/** A failed run: non-zero exit and exactly one line on stderr, which is returned. */
function oneLineError(r: CliResult): string {
  expect(r.timedOut, explain(r)).toBe(false);
  expect(r.code, explain(r)).not.toBe(0);
  const lines = nonEmptyLines(r.stderr);
  expect(lines, explain(r)).toHaveLength(1);
  return lines[0] as string;
}

async function sandboxesOf(uid: string) {
  return (await cri.listPodSandbox({ filter: { labelSelector: { [UID_LABEL]: uid } } })).items;
}

async function containersOf(uid: string) {
  return (await cri.listContainers({ filter: { labelSelector: { [UID_LABEL]: uid } } })).containers;
}

function podLogDir(namespace: string, name: string, uid: string): string {
  return path.join(LOG_ROOT, `${namespace}_${name}_${uid}`);
}

function podDirs(): string[] {
  try {
    return fs.readdirSync(path.join(rt.rootDir, 'pods'));
  } catch {
    return [];
  }
}

/** Nothing of the pod is left: no sandbox, no container, no pod dir, no log dir. */
async function expectPodGone(p: { namespace: string; name: string; uid: string }): Promise<void> {
  expect(p.uid).toMatch(/^[0-9a-f]{32}$/);
  expect(await sandboxesOf(p.uid)).toEqual([]);
  expect(await containersOf(p.uid)).toEqual([]);
  expect(fs.existsSync(path.join(rt.rootDir, 'pods', p.uid)), `pod dir of ${p.name}`).toBe(false);
  expect(fs.existsSync(podLogDir(p.namespace, p.name, p.uid)), `log dir of ${p.name}`).toBe(false);
}

/** The node is empty: no sandbox or container at all in the runtime, no pod dir. */
async function expectNodeEmpty(): Promise<void> {
  expect((await cri.listPodSandbox()).items.map((s) => s.metadata?.name)).toEqual([]);
  expect((await cri.listContainers()).containers.map((c) => c.metadata?.name)).toEqual([]);
  expect(podDirs()).toEqual([]);
}

/** Retry `fn` until it stops throwing (logs are written asynchronously by the shim). */
async function eventually<T>(fn: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Run a pod (waiting for running) and return its status as printed. */
async function runPod(file: string, extra: string[] = []): Promise<V1Pod> {
  const { r, json } = await kletJson<V1Pod>(['run-pod', file, ...extra]);
  expectOk(r);
  return json;
}

function ids(pod: V1Pod): { namespace: string; name: string; uid: string } {
  return { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
}

/** containerd's verbose sandbox status carries the config it decoded, as Go JSON. */
async function sandboxConfigSeenByRuntime(id: string): Promise<{ log_directory?: string; hostname?: string }> {
  const { info } = await cri.podSandboxStatus({ podSandboxId: id, verbose: true });
  return (JSON.parse(info.info ?? '{}') as { config?: { log_directory?: string } }).config ?? {};
}

beforeAll(async () => {
  rt = await startTestRuntime();
  cri = CriClient.connect(rt.endpoint);
  manifests = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-pods-test-'));
});

afterEach(async () => {
  if (!rt) return;
  const left = (await cri.listPodSandbox()).items.length + podDirs().length;
  if (left > 0) {
    // A failed test: clean up through klet, then through CRI, so the next test starts empty.
    await klet(['delete', '--all', '--force']);
    await removeAllPods(cri);
  }
  await expectNodeEmpty();
});

afterAll(async () => {
  cri?.close();
  await rt?.stop();
  if (manifests) fs.rmSync(manifests, { recursive: true, force: true });
});

describe('run-pod', () => {
  it('runs init + two app containers: env, fieldRefs, $(VAR) expansion, emptyDir, CRI labels and log paths', async () => {
    const file = manifest(
      'full.yaml',
      `apiVersion: v1
kind: Pod
metadata:
  name: full
  namespace: pt
  labels:
    app: full
    tier: test
spec:
  terminationGracePeriodSeconds: 7
  initContainers:
    - name: prepare
      image: ${rt.images.busybox}
      command: ["sh", "-c", "echo \\"prepared by $(MY_NAME)\\" > /shared/msg; echo init done"]
      env:
        - name: MY_NAME
          valueFrom: { fieldRef: { fieldPath: metadata.name } }
      volumeMounts:
        - { name: shared, mountPath: /shared }
  containers:
    - name: main
      image: ${rt.images.busybox}
      command: ["sh", "-c"]
      args:
        - "echo greeting=$(GREETING); echo combined=$(COMBINED); echo 'escaped=$$(GREETING)'; echo 'missing=$(NOPE)'; cat /shared/msg; ${SLEEP_FOREVER}"
      env:
        - { name: GREETING, value: hello }
        - { name: COMBINED, value: "$(GREETING)-world" }
        - name: POD_NAME
          valueFrom: { fieldRef: { fieldPath: metadata.name } }
        - name: POD_NAMESPACE
          valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
        - name: POD_UID
          valueFrom: { fieldRef: { fieldPath: metadata.uid } }
        - name: NODE_NAME
          valueFrom: { fieldRef: { fieldPath: spec.nodeName } }
        - name: POD_IP
          valueFrom: { fieldRef: { fieldPath: status.podIP } }
      volumeMounts:
        - { name: shared, mountPath: /shared, readOnly: true }
    - name: side
      image: ${rt.images.busybox}
      command: ["sh", "-c", "echo side up; ${SLEEP_FOREVER}"]
  volumes:
    - name: shared
      emptyDir: {}
`,
    );
    const pod = await runPod(file);
    const { namespace, name, uid } = ids(pod);
    expect(name).toBe(`full-${NODE}`);
    expect(namespace).toBe('pt');
    expect(uid).toMatch(/^[0-9a-f]{32}$/);
    expect(pod.status?.phase).toBe('Running');
    const podIP = pod.status?.podIP ?? '';
    expect(podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(pod.status?.initContainerStatuses?.map((c) => [c.name, c.state?.terminated?.exitCode])).toEqual([['prepare', 0]]);
    expect(pod.status?.containerStatuses?.map((c) => [c.name, c.state?.running !== undefined])).toEqual([
      ['main', true],
      ['side', true],
    ]);

    // Sandbox: the kubelet's labels, the pod's own labels, the pod log dir.
    const sandboxes = await sandboxesOf(uid);
    expect(sandboxes).toHaveLength(1);
    const sb = sandboxes[0]!;
    expect(sb.state).toBe(PodSandboxState.SANDBOX_READY);
    expect(sb.metadata).toEqual({ name, namespace, uid, attempt: 0 });
    expect(sb.labels).toEqual({
      app: 'full',
      tier: 'test',
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'pt',
      'io.kubernetes.pod.uid': uid,
      // klet's owner label: this root dir and node name.
      [KLET_INSTANCE_LABEL]: kletInstance(rt.rootDir, NODE),
    });
    // The same sandbox is found by the pod's own labels and by name.
    expect((await cri.listPodSandbox({ filter: { labelSelector: { app: 'full', tier: 'test' } } })).items.map((s) => s.id)).toEqual([sb.id]);
    expect(
      (await cri.listPodSandbox({ filter: { labelSelector: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'pt' } } })).items.map(
        (s) => s.id,
      ),
    ).toEqual([sb.id]);
    const logDir = podLogDir('pt', name, uid);
    expect(logDir).toBe(`/var/log/pods/pt_full-testnode_${uid}`);
    expect((await sandboxConfigSeenByRuntime(sb.id)).log_directory).toBe(logDir);
    const sbStatus = (await cri.podSandboxStatus({ podSandboxId: sb.id })).status;
    expect(sbStatus?.network?.ip).toBe(podIP);

    // Containers: labels, annotations, log paths, one per container, all in that sandbox.
    const containers = await containersOf(uid);
    expect(containers.map((c) => c.metadata?.name).sort()).toEqual(['main', 'prepare', 'side']);
    for (const c of containers) {
      const cname = c.metadata?.name ?? '';
      expect(c.podSandboxId).toBe(sb.id);
      expect(c.metadata?.attempt).toBe(0);
      expect(c.labels).toEqual({
        'io.kubernetes.container.name': cname,
        'io.kubernetes.pod.name': name,
        'io.kubernetes.pod.namespace': 'pt',
        'io.kubernetes.pod.uid': uid,
        [KLET_INSTANCE_LABEL]: kletInstance(rt.rootDir, NODE),
      });
      expect(c.annotations['io.kubernetes.container.hash'], cname).toMatch(/^[0-9a-f]+$/);
      expect(c.annotations['io.kubernetes.container.restartCount']).toBe('0');
      expect(c.annotations['io.kubernetes.pod.terminationGracePeriod']).toBe('7');
      expect(c.annotations['io.kubernetes.container.terminationMessagePath']).toBe('/dev/termination-log');
      const { status } = await cri.containerStatus({ containerId: c.id });
      expect(status?.logPath).toBe(path.join(logDir, cname, '0.log'));
      expect(fs.existsSync(path.join(logDir, cname, '0.log')), `${cname}/0.log`).toBe(true);
      // The same container is found through its name label.
      const byName = await cri.listContainers({ filter: { labelSelector: { [UID_LABEL]: uid, 'io.kubernetes.container.name': cname } } });
      expect(byName.containers.map((x) => x.id)).toEqual([c.id]);
    }
    // Different specs, different hashes.
    const hashes = new Set(containers.map((c) => c.annotations['io.kubernetes.container.hash']));
    expect(hashes.size).toBe(3);

    // What the app container printed: $(VAR) expanded, $$ escaped, unknown kept; the init container's file.
    const mainLog = await eventually(async () => {
      const r = await klet(['logs', `pt/${name}`, '-c', 'main']);
      expectOk(r);
      expect(r.stdout).toContain(`prepared by ${name}`);
      return r.stdout;
    });
    expect(nonEmptyLines(mainLog)).toEqual([
      'greeting=hello',
      'combined=hello-world',
      'escaped=$(GREETING)',
      'missing=$(NOPE)',
      `prepared by ${name}`,
    ]);
    const initLog = await klet(['logs', `pt/${name}`, '-c', 'prepare']);
    expectOk(initLog);
    expect(initLog.stdout).toBe('init done\n');
    const sideLog = await eventually(async () => {
      const r = await klet(['logs', `pt/${name}`, '-c', 'side']);
      expect(r.stdout).toBe('side up\n');
      return r;
    });
    expectOk(sideLog);

    // The environment as the process sees it.
    const main = containers.find((c) => c.metadata?.name === 'main')!;
    const env = await cri.execSync({ containerId: main.id, cmd: ['env'], timeout: 10n });
    expect(env.exitCode).toBe(0);
    const vars = Object.fromEntries(
      env.stdout
        .toString()
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(vars).toMatchObject({
      GREETING: 'hello',
      COMBINED: 'hello-world',
      POD_NAME: name,
      POD_NAMESPACE: 'pt',
      POD_UID: uid,
      NODE_NAME: NODE,
      POD_IP: podIP,
      HOSTNAME: name,
    });
    // The emptyDir is shared and read-only for main.
    const ro = await cri.execSync({ containerId: main.id, cmd: ['sh', '-c', 'cat /shared/msg; touch /shared/x 2>/dev/null || echo read-only'], timeout: 10n });
    expect(ro.stdout.toString()).toBe(`prepared by ${name}\nread-only\n`);
    expect(fs.readFileSync(path.join(rt.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'shared', 'msg'), 'utf8')).toBe(
      `prepared by ${name}\n`,
    );

    const del = await klet(['delete', `pt/${name}`]);
    expectOk(del);
    expect(del.stdout).toBe(`pod "pt/${name}" deleted\n`);
    await expectPodGone({ namespace, name, uid });
  });

  it('restartPolicy Never, exit 3: --rm exits 3, prints the Failed pod, leaves nothing; without --rm status shows Failed', async () => {
    const file = manifest('fail.yaml', simplePod('fail', 'echo failing; exit 3', { restartPolicy: 'Never' }));
    const { r, json: pod } = await kletJson<V1Pod>(['run-pod', file, '--rm']);
    expect(r.code, explain(r)).toBe(3);
    expect(r.stderr).toContain(`error: pod default/fail-${NODE}: pod failed (exit code 3)`);
    expect(pod.kind).toBe('Pod');
    expect(pod.status?.phase).toBe('Failed');
    const cs = pod.status?.containerStatuses?.[0];
    expect(cs?.name).toBe('c');
    expect(cs?.ready).toBe(false);
    expect(cs?.state?.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(cs?.state?.terminated?.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
    await expectPodGone(ids(pod));
    await expectNodeEmpty();

    // Without --rm: --wait completed reports the exit code and the pod stays, Failed.
    const again = await klet(['run-pod', file, '--wait', 'completed']);
    expect(again.code, explain(again)).toBe(3);
    expect(again.stdout).toMatch(new RegExp(`^NAMESPACE +NAME +READY +STATUS +RESTARTS +AGE +IP\\ndefault +fail-${NODE} +0/1 +Error +0 `));
    const { r: st, json: failed } = await kletJson<V1Pod>(['status', `fail-${NODE}`]);
    expectOk(st);
    expect(failed.metadata?.uid).toBe(pod.metadata?.uid);
    expect(failed.status?.phase).toBe('Failed');
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(failed.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    // The logs of the finished container are still there.
    const logs = await klet(['logs', `fail-${NODE}`]);
    expectOk(logs);
    expect(logs.stdout).toBe('failing\n');
    // A Never pod that finished has its sandbox stopped, as the kubelet does.
    const [sb] = await sandboxesOf(pod.metadata?.uid ?? '');
    expect(sb?.state).toBe(PodSandboxState.SANDBOX_NOTREADY);

    expectOk(await klet(['delete', `fail-${NODE}`]));
    await expectPodGone(ids(pod));
  });
  it('hostNetwork: the sandbox starts with an empty hostname (the node\'s UTS namespace) and serves on the node\'s loopback', async () => {
    const port = 23000 + Math.floor(Math.random() * 2000);
    const file = manifest(
      'hostnet.yaml',
      `apiVersion: v1
kind: Pod
metadata:
  name: hostnet
  namespace: kube-system
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  priorityClassName: system-node-critical
  securityContext:
    seccompProfile: { type: RuntimeDefault }
  containers:
    - name: web
      image: ${rt.images.busybox}
      command: ["sh", "-c", "mkdir -p /www && echo hello-from-host-network > /www/index.html && exec httpd -f -p 127.0.0.1:${port} -h /www"]
`,
    );
    const pod = await runPod(file);
    expect(pod.status?.phase).toBe('Running');
    const [sb] = await sandboxesOf(ids(pod).uid);
    expect((await sandboxConfigSeenByRuntime(sb!.id)).hostname ?? '').toBe('');
    const [c] = await containersOf(ids(pod).uid);
    const hn = await cri.execSync({ containerId: c!.id, cmd: ['hostname'], timeout: 10n });
    expect(Buffer.from(hn.stdout).toString().trim()).toBe(os.hostname());
    const body = await eventually(async () => (await fetch(`http://127.0.0.1:${port}/`)).text());
    expect(body).toBe('hello-from-host-network\n');
    expectOk(await klet(['delete', `kube-system/hostnet-${NODE}`]));
    await expectPodGone(ids(pod));
  });
});

describe('termination messages', () => {
  it('the terminationMessagePath file, and FallbackToLogsOnError (last 80 lines, at most 2048 bytes), reach state.terminated.message', async () => {
    const file = manifest(
      'tmsg.yaml',
      `apiVersion: v1
kind: Pod
metadata:
  name: tmsg
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
    - name: file
      image: ${rt.images.busybox}
      command: ["sh", "-c", "printf 'bye from file' > /dev/termination-log; exit 1"]
    - name: custom
      image: ${rt.images.busybox}
      terminationMessagePath: /tmp/why
      command: ["sh", "-c", "echo ok > /tmp/why"]
    - name: logs
      image: ${rt.images.busybox}
      terminationMessagePolicy: FallbackToLogsOnError
      command: ["sh", "-c", "i=0; while [ $i -lt 100 ]; do echo line-$i; i=$((i+1)); done; exit 2"]
    - name: longlogs
      image: ${rt.images.busybox}
      terminationMessagePolicy: FallbackToLogsOnError
      command: ["sh", "-c", "i=0; while [ $i -lt 10 ]; do printf '%0500d\\n' $i; i=$((i+1)); done; exit 3"]
    - name: quiet
      image: ${rt.images.busybox}
      terminationMessagePolicy: FallbackToLogsOnError
      command: ["sh", "-c", "echo not shown; exit 0"]
    - name: nonewline
      image: ${rt.images.busybox}
      terminationMessagePolicy: FallbackToLogsOnError
      command: ["sh", "-c", "echo -n DONE; exit 1"]
`,
    );
    const { r, json: pod } = await kletJson<V1Pod>(['run-pod', file, '--rm', '--timeout', '60s']);
    expect(r.code, explain(r)).not.toBe(0);
    const msg = (name: string) => pod.status?.containerStatuses?.find((c) => c.name === name)?.state?.terminated?.message;
    expect(msg('file')).toBe('bye from file');
    expect(msg('custom')).toBe('ok\n');
    // The last 80 of 100 lines.
    expect(msg('logs')).toBe(Array.from({ length: 80 }, (_, i) => `line-${i + 20}\n`).join(''));
    // Ten 501-byte lines: the last 80 lines capped at 2048 bytes.
    const long = msg('longlogs') ?? '';
    expect(Buffer.byteLength(long)).toBe(2048);
    expect(long.startsWith(`${'0'.repeat(500)}\n`)).toBe(true);
    // Exit 0: no fallback to the logs.
    expect(msg('quiet')).toBeUndefined();
    // A last line left without its newline stays so, as the kubelet reads it (the conformance spec's `echo -n DONE`).
    expect(msg('nonewline')).toBe('DONE');
    await expectPodGone(ids(pod));
  });
});

describe('hostPort admission', () => {
  it('a second pod asking for a hostPort already held is rejected: Failed, NodePorts, the port named, nothing created', async () => {
    const port = 31000 + Math.floor(Math.random() * 2000);
    const withPort = (name: string) =>
      simplePod(name, SLEEP_FOREVER, { grace: 1 }).replace(
        `      command:`,
        `      ports:\n        - { containerPort: 80, hostPort: ${port} }\n      command:`,
      );
    const first = await runPod(manifest('port-a.yaml', withPort('port-a')));
    expect(first.status?.phase).toBe('Running');
    const { r, json: second } = await kletJson<V1Pod>(['run-pod', manifest('port-b.yaml', withPort('port-b')), '--timeout', '60s']);
    expect(r.code, explain(r)).not.toBe(0);
    expect(second.status?.phase).toBe('Failed');
    expect(second.status?.reason).toBe('NodePorts');
    expect(second.status?.message).toBe(
      `Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports (hostPort ${port}/TCP is held by pod default/port-a-${NODE})`,
    );
    expect(r.stderr).toContain(`pod failed: NodePorts: `);
    // Rejected before anything was made for it.
    expect(await sandboxesOf(ids(second).uid)).toEqual([]);
    // status says the same afterwards.
    const { json: again } = await kletJson<V1Pod>(['status', `port-b-${NODE}`]);
    expect([again.status?.phase, again.status?.reason]).toEqual(['Failed', 'NodePorts']);
    expectOk(await klet(['delete', '--all']));
  });
});

describe('the sandbox\'s pause process', () => {
  it('is the static /pause as PID 1 of a shared-PID pod: reaps re-parented children, and the pod stops promptly on SIGTERM', async () => {
    const file = manifest(
      'shared-pid.yaml',
      simplePod('sharedpid', SLEEP_FOREVER, { grace: 30 }).replace('spec:\n', 'spec:\n  shareProcessNamespace: true\n'),
    );
    const pod = await runPod(file);
    const [c] = await containersOf(ids(pod).uid);
    const sh = async (script: string) =>
      Buffer.from((await cri.execSync({ containerId: c!.id, cmd: ['sh', '-c', script], timeout: 20n })).stdout).toString();
    expect((await sh('cat /proc/1/cmdline | tr "\\0" " "')).trim()).toBe('/pause');
    // Orphans: each subshell exits at once, its sleep is re-parented to PID 1 and exits 0.3 s later.
    await sh('for i in 1 2 3 4 5; do (sleep 0.3 &); done; sleep 1.5');
    const zombies = await sh('for s in /proc/[0-9]*/stat; do cut -d" " -f3 "$s"; done | grep -c Z || true');
    expect(zombies.trim()).toBe('0');
    // The pause process exits on SIGTERM at once: deleting the pod does not wait for a SIGKILL.
    const t0 = Date.now();
    expectOk(await klet(['delete', `sharedpid-${NODE}`]));
    expect(Date.now() - t0).toBeLessThan(15_000);
    await expectPodGone(ids(pod));
  });
});

describe('a pod being deleted', () => {
  it('shows as Terminating with its deletionTimestamp and the IP it had, not ContainerCreating/<none>', async () => {
    const file = manifest('term.yaml', simplePod('term', "trap '' TERM; sleep 1000000 & wait; sleep 1000000", { grace: 8 }));
    const pod = await runPod(file);
    const ip = pod.status?.podIP ?? '';
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const deleting = klet(['delete', `term-${NODE}`]);
    // The container ignores SIGTERM: for 8 s the pod is terminating.
    const seen = await eventually(async () => {
      const { json } = await kletJson<V1Pod>(['status', `term-${NODE}`]);
      if (json.metadata?.deletionTimestamp === undefined) throw new Error('no deletionTimestamp yet');
      return json;
    }, 6000);
    expect(seen.metadata?.deletionGracePeriodSeconds).toBe(8);
    expect(seen.status?.podIP).toBe(ip);
    const table = await klet(['status']);
    expect(table.stdout).toMatch(new RegExp(`^default +term-${NODE} +\\S+ +Terminating +0 +\\S+ +${ip.replaceAll('.', '\\.')}`, 'm'));
    expectOk(await deleting);
    await expectPodGone(ids(pod));
  });
});

describe('seccomp', () => {
  it('a Localhost profile is found under <root-dir>/seccomp and applied', async () => {
    const dir = path.join(rt.rootDir, 'seccomp', 'profiles');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'no-mkdir.json'),
      JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] }),
    );
    const file = manifest(
      'seccomp.yaml',
      simplePod('seccomp', 'mkdir /tmp/x || exit 7', { restartPolicy: 'Never' }).replace(
        'spec:\n',
        'spec:\n  securityContext:\n    seccompProfile: { type: Localhost, localhostProfile: profiles/no-mkdir.json }\n',
      ),
    );
    const { r, json: pod } = await kletJson<V1Pod>(['run-pod', file, '--rm', '--timeout', '60s']);
    expect(r.code, explain(r)).toBe(7);
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(7);
    fs.rmSync(path.join(rt.rootDir, 'seccomp'), { recursive: true, force: true });
  });
});

describe('runonce', () => {
  it('starts the valid pods of a directory, reports the invalid one by file and field, exits 1; --cleanup removes everything', async () => {
    const dir = path.join(manifests, 'runonce');
    manifest('a-always.yaml', simplePod('always-a', SLEEP_FOREVER), dir);
    manifest('b-always.yaml', simplePod('always-b', SLEEP_FOREVER), dir);
    manifest('c-never.yaml', simplePod('never', 'echo done', { restartPolicy: 'Never' }), dir);
    manifest('d-onfailure.yaml', simplePod('onfailure', 'exit 0', { restartPolicy: 'OnFailure' }), dir);
    const bad = manifest(
      'e-invalid.yaml',
      simplePod('invalid', SLEEP_FOREVER).replace('      command:', '      imagePullPolicyy: IfNotPresent\n      command:'),
      dir,
    );
    const badLine = fs.readFileSync(bad, 'utf8').split('\n').indexOf('      imagePullPolicyy: IfNotPresent') + 1;
    expect(badLine).toBeGreaterThan(0);

    interface Report {
      ok: boolean;
      pods: { name: string; uid: string; restartPolicy: string; ok: boolean; phase: string; exitCode: number | null; waitedFor: string }[];
      invalid: { file: string; line: number | null; fieldPath: string | null; message: string }[];
      cleanedUp: boolean;
    }
    const { r, json } = await kletJson<Report>(['runonce', '--manifest-dir', dir]);
    expect(r.code, explain(r)).toBe(1);
    expect(json.ok).toBe(false);
    expect(r.stderr).toContain(`error: ${bad}:${badLine}: spec.containers[0].imagePullPolicyy: unknown field`);
    expect(json.invalid).toEqual([{ file: bad, line: badLine, fieldPath: 'spec.containers[0].imagePullPolicyy', message: 'unknown field' }]);
    const summary = json.pods.map((p) => [p.name, p.restartPolicy, p.ok, p.phase, p.waitedFor]).sort();
    expect(summary).toEqual([
      [`always-a-${NODE}`, 'Always', true, 'Running', 'running'],
      [`always-b-${NODE}`, 'Always', true, 'Running', 'running'],
      [`never-${NODE}`, 'Never', true, 'Succeeded', 'completed'],
      [`onfailure-${NODE}`, 'OnFailure', true, 'Succeeded', 'completed'],
    ]);
    expect(json.cleanedUp).toBe(false);

    // Four pods on the node: one sandbox and one record each; the finished ones' sandboxes stopped.
    const uids = json.pods.map((p) => p.uid).sort();
    expect(new Set(uids).size).toBe(4);
    const sandboxes = (await cri.listPodSandbox()).items;
    expect(sandboxes.map((s) => s.labels[UID_LABEL]).sort()).toEqual(uids);
    const ready = sandboxes.filter((s) => s.state === PodSandboxState.SANDBOX_READY).map((s) => s.metadata?.name).sort();
    expect(ready).toEqual([`always-a-${NODE}`, `always-b-${NODE}`]);
    expect(podDirs().sort()).toEqual(uids);
    for (const uid of uids) expect(fs.existsSync(path.join(rt.rootDir, 'pods', uid, 'pod.json'))).toBe(true);
    expect((await cri.listContainers()).containers).toHaveLength(4);
    const { json: list } = await kletJson<V1PodList>(['status']);
    expect(list.items.map((p) => p.metadata?.uid).sort()).toEqual(uids);

    // Run again with --cleanup: the same pods (still invalid one), then everything removed.
    const { r: r2, json: json2 } = await kletJson<Report>(['runonce', '--manifest-dir', dir, '--cleanup']);
    expect(r2.code, explain(r2)).toBe(1);
    expect(json2.cleanedUp).toBe(true);
    expect(json2.pods.map((p) => p.uid).sort()).toEqual(uids);
    expect(json2.invalid.map((e) => e.fieldPath)).toEqual(['spec.containers[0].imagePullPolicyy']);
    for (const p of json2.pods) await expectPodGone({ namespace: 'default', name: p.name, uid: p.uid });
    await expectNodeEmpty();
  });
});

describe('status', () => {
  it('-o json is a real v1 Pod (client-node ObjectSerializer), without POD a v1 PodList', async () => {
    const file = manifest(
      'status.yaml',
      `apiVersion: v1
kind: Pod
metadata:
  name: shown
  labels: { app: shown }
spec:
  containers:
    - name: one
      image: ${rt.images.busybox}
      command: ["sh", "-c", "${SLEEP_FOREVER}"]
    - name: two
      image: ${rt.images.busybox}
      command: ["sh", "-c", "${SLEEP_FOREVER}"]
`,
    );
    const started = Date.now();
    const ran = await runPod(file, ['--wait', 'ready']);
    const { uid, name } = ids(ran);

    const { r, json } = await kletJson<unknown>(['status', `default/${name}`]);
    expectOk(r);
    const pod = ObjectSerializer.deserialize(json, 'V1Pod', '') as V1Pod;
    expect(pod.apiVersion).toBe('v1');
    expect(pod.kind).toBe('Pod');
    expect(pod.metadata?.name).toBe(`shown-${NODE}`);
    expect(pod.metadata?.namespace).toBe('default');
    expect(pod.metadata?.uid).toBe(uid);
    expect(pod.metadata?.labels).toEqual({ app: 'shown' });
    expect(pod.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(pod.spec?.nodeName).toBe(NODE);
    expect(pod.status?.phase).toBe('Running');

    const [sb] = await sandboxesOf(uid);
    const ip = (await cri.podSandboxStatus({ podSandboxId: sb!.id })).status?.network?.ip;
    expect(pod.status?.podIP).toBe(ip);
    expect(pod.status?.podIPs).toEqual([{ ip }]);
    expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(pod.status?.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
    const startTime = pod.status?.startTime;
    expect(startTime).toBeInstanceOf(Date);
    // Seconds precision on the wire.
    expect(startTime!.getTime()).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000);
    expect(startTime!.getTime()).toBeLessThanOrEqual(Date.now());

    const criContainers = await containersOf(uid);
    const statuses = pod.status?.containerStatuses ?? [];
    expect(statuses.map((c) => [c.name, c.ready, c.started, c.restartCount])).toEqual([
      ['one', true, true, 0],
      ['two', true, true, 0],
    ]);
    for (const cs of statuses) {
      const criId = criContainers.find((c) => c.metadata?.name === cs.name)?.id;
      expect(cs.containerID).toBe(`containerd://${criId}`);
      expect(cs.image).toBe(rt.images.busybox);
      expect(cs.imageID).toMatch(/sha256:[0-9a-f]{64}$/);
      expect(cs.state?.running?.startedAt).toBeInstanceOf(Date);
    }

    const { r: rl, json: listJson } = await kletJson<{ kind: string; apiVersion: string }>(['status']);
    expectOk(rl);
    expect(listJson.kind).toBe('PodList');
    expect(listJson.apiVersion).toBe('v1');
    const list = ObjectSerializer.deserialize(listJson, 'V1PodList', '') as V1PodList;
    expect(list.items.map((p) => p.metadata?.uid)).toEqual([uid]);
    expect(list.items[0]?.status?.startTime).toBeInstanceOf(Date);

    // The table, kubectl's columns.
    const table = await klet(['status']);
    expectOk(table);
    expect(table.stdout).toMatch(new RegExp(`\\ndefault +shown-${NODE} +2/2 +Running +0 +\\S+ +${ip!.replaceAll('.', '\\.')}\\n`));

    expectOk(await klet(['delete', name]));
    await expectPodGone(ids(ran));
  });
});

describe('delete', () => {
  it('removes sandbox, containers, pod dir and log dir', async () => {
    const pod = await runPod(manifest('del.yaml', simplePod('del', `echo hi; ${SLEEP_FOREVER}`)));
    const p = ids(pod);
    expect(await sandboxesOf(p.uid)).toHaveLength(1);
    expect(await containersOf(p.uid)).toHaveLength(1);
    expect(fs.existsSync(path.join(rt.rootDir, 'pods', p.uid))).toBe(true);
    expect(fs.existsSync(podLogDir(p.namespace, p.name, p.uid))).toBe(true);
    const { r, json } = await kletJson<{ deleted: unknown[] }>(['delete', p.uid.slice(0, 8)]);
    expectOk(r);
    expect(json.deleted).toEqual([p]);
    await expectPodGone(p);
    // It is gone for klet too.
    const again = await klet(['delete', p.name]);
    expect(oneLineError(again)).toMatch(new RegExp(`^error: pod "${p.name}" not found( \\(.*\\))?$`));
  });

  it('honours the grace period: TERM handled exits promptly, TERM ignored is killed after it', async () => {
    const polite = ids(await runPod(manifest('polite.yaml', simplePod('polite', "trap 'exit 0' TERM; while :; do sleep 1; done", { grace: 30 }))));
    const stubborn = ids(await runPod(manifest('stubborn.yaml', simplePod('stubborn', "trap '' TERM; while :; do sleep 1; done", { grace: 30 }))));
    const patient = ids(await runPod(manifest('patient.yaml', simplePod('patient', "trap '' TERM; while :; do sleep 1; done", { grace: 3 }))));

    // SIGTERM is delivered: the polite one does not wait for its 30 s.
    const t1 = await klet(['delete', polite.name]);
    expectOk(t1);
    expect(t1.durationMs).toBeLessThan(5_000);
    await expectPodGone(polite);

    // --grace-period 1 overrides the pod's 30 s: SIGKILL after 1 s.
    const t2 = await klet(['delete', stubborn.name, '--grace-period', '1']);
    expectOk(t2);
    expect(t2.durationMs).toBeGreaterThanOrEqual(1_000);
    expect(t2.durationMs).toBeLessThan(5_000);
    await expectPodGone(stubborn);

    // Without the flag, the pod's own terminationGracePeriodSeconds (3 s).
    const t3 = await klet(['delete', patient.name]);
    expectOk(t3);
    expect(t3.durationMs).toBeGreaterThanOrEqual(3_000);
    expect(t3.durationMs).toBeLessThan(8_000);
    await expectPodGone(patient);
  });

  it('--all deletes every pod; an unknown pod is an error', async () => {
    const a = ids(await runPod(manifest('all-a.yaml', simplePod('all-a', SLEEP_FOREVER))));
    const b = ids(await runPod(manifest('all-b.yaml', simplePod('all-b', SLEEP_FOREVER, { namespace: 'other' }))));
    const c = ids(await runPod(manifest('all-c.yaml', simplePod('all-c', 'exit 0', { restartPolicy: 'Never' })), ['--wait', 'completed']));
    const { r, json } = await kletJson<{ deleted: { namespace: string; name: string; uid: string }[] }>(['delete', '--all']);
    expectOk(r);
    expect(json.deleted.sort((x, y) => x.name.localeCompare(y.name))).toEqual([a, b, c]);
    for (const p of [a, b, c]) await expectPodGone(p);
    await expectNodeEmpty();

    const none = await klet(['delete', '--all']);
    expectOk(none);
    expect(none.stdout).toBe('No pods to delete.\n');

    const unknown = await klet(['delete', 'x']);
    expect(oneLineError(unknown)).toMatch(/^error: pod "x" not found( \(.*\))?$/);
  });
});

describe('bad input: one line naming file and line or field, nothing created', () => {
  const bad = (name: string, text: string) => manifest(path.join('bad', name), text);

  /**
   * Run `klet ARGS`, expect a one-line error, and that the node is still
   * empty: no sandbox, container or pod dir, and no log dir for `podName`.
   */
  async function refused(args: string[], podName?: string): Promise<{ line: string; r: CliResult }> {
    const r = await klet(args);
    const line = oneLineError(r);
    expect(line).toMatch(/^error: /);
    expect(r.stdout).toBe('');
    await expectNodeEmpty();
    if (podName !== undefined) {
      const logDirs = fs.readdirSync(LOG_ROOT).filter((d) => d.startsWith(`default_${podName}-${NODE}_`));
      expect(logDirs).toEqual([]);
    }
    return { line, r };
  }

  it('invalid YAML: file:line', async () => {
    const indent = bad(
      'indent.yaml',
      `apiVersion: v1
kind: Pod
metadata:
  name: yaml
  labels:
    app: x
   tier: y
spec:
  containers:
    - name: c
      image: ${rt.images.busybox}
`,
    );
    const { line } = await refused(['run-pod', indent], 'yaml');
    expect(line).toMatch(new RegExp(`^error: ${indent}:7: `));

    // An error found at the end of the input points at the last line, not past it.
    const text = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: yaml\nspec:\n  containers:\n    - name: c\n      image: [unclosed\n`;
    const unclosed = bad('unclosed.yaml', text);
    const { line: l2 } = await refused(['run-pod', unclosed], 'yaml');
    expect(l2).toMatch(new RegExp(`^error: ${unclosed}:8: .*\\]`));
  });

  it('unknown field: field path and line', async () => {
    const file = bad('unknown.yaml', simplePod('unknown', 'true').replace('      command:', '      imagePullPolicyy: Never\n      command:'));
    const { line } = await refused(['run-pod', file], 'unknown');
    const at = fs.readFileSync(file, 'utf8').split('\n').indexOf('      imagePullPolicyy: Never') + 1;
    expect(at).toBe(9);
    expect(line).toBe(`error: ${file}:${at}: spec.containers[0].imagePullPolicyy: unknown field`);
  });

  it('missing image: Required value', async () => {
    const file = bad('noimage.yaml', 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: noimage\nspec:\n  containers:\n    - name: c\n      command: ["true"]\n');
    const { line } = await refused(['run-pod', file], 'noimage');
    expect(line).toBe(`error: ${file}:7: spec.containers[0].image: Required value`);
  });

  it('an absent image with imagePullPolicy Never: names the image', async () => {
    const file = bad(
      'never.yaml',
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: neverpull\nspec:\n  containers:\n    - name: c\n      image: localhost/klet/not-here:1\n      imagePullPolicy: Never\n',
    );
    // Named as on the command line (here relative to klet's working directory), like every manifest error.
    const rel = path.relative(PROJECT_ROOT, file);
    const { line } = await refused(['run-pod', rel], 'neverpull');
    expect(line).toContain(`error: ${rel}: spec.containers[0].image: `);
    expect(line).toContain('"localhost/klet/not-here:1" is not present on this node and imagePullPolicy is Never');
  });

  it('duplicate container names', async () => {
    const file = bad(
      'dup.yaml',
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: dup\nspec:\n  containers:\n    - name: c\n      image: ${rt.images.busybox}\n    - name: c\n      image: ${rt.images.busybox}\n`,
    );
    const { line } = await refused(['run-pod', file], 'dup');
    expect(line).toBe(`error: ${file}:9: spec.containers[1].name: Duplicate value: "c"`);
  });

  it('a pod name that is not DNS-1123', async () => {
    const file = bad('name.yaml', simplePod('Bad_Name', 'true'));
    const { line } = await refused(['run-pod', file]);
    expect(line).toMatch(new RegExp(`^error: ${file}:4: metadata\\.name: Invalid value: "Bad_Name-${NODE}": a lowercase RFC 1123 subdomain`));
  });

  it('runonce --manifest-dir that does not exist: names the dir', async () => {
    const { line, r } = await refused(['runonce', '--manifest-dir', '/nonexistent']);
    expect(line).toBe('error: --manifest-dir /nonexistent: no such file or directory');
    expect(r.code).toBe(2);
  });

  it('a 50 MB garbage manifest is refused quickly by its size', async () => {
    const file = path.join(manifests, 'bad', 'garbage.yaml');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const fd = fs.openSync(file, 'w');
    for (let i = 0; i < 50; i++) fs.writeSync(fd, randomBytes(1_000_000));
    fs.closeSync(fd);
    const { line, r } = await refused(['run-pod', file]);
    expect(line).toBe(`error: ${file}: manifest is 47.7 MiB, larger than the 10 MiB limit`);
    expect(r.durationMs).toBeLessThan(5_000);
    // In a manifest directory it is one invalid file among others, refused the same way.
    const dir = path.join(manifests, 'garbage-dir');
    fs.mkdirSync(dir);
    fs.renameSync(file, path.join(dir, 'garbage.yaml'));
    const { r: ro, json } = await kletJson<{ pods: unknown[]; invalid: { file: string; message: string }[] }>(['runonce', '--manifest-dir', dir]);
    expect(ro.code, explain(ro)).toBe(1);
    expect(ro.durationMs).toBeLessThan(5_000);
    expect(json.pods).toEqual([]);
    expect(json.invalid).toEqual([{ file: path.join(dir, 'garbage.yaml'), line: null, fieldPath: null, message: 'manifest is 47.7 MiB, larger than the 10 MiB limit' }]);
    await expectNodeEmpty();
  });
});

describe('logs', () => {
  it('--tail, --timestamps, --previous, and -c required for several containers', async () => {
    const file = manifest(
      'logs.yaml',
      `apiVersion: v1
kind: Pod
metadata:
  name: talk
spec:
  initContainers:
    - name: setup
      image: ${rt.images.busybox}
      command: ["sh", "-c", "echo setting up"]
  containers:
    - name: lines
      image: ${rt.images.busybox}
      command: ["sh", "-c", "for i in 1 2 3 4 5; do echo line $i; done; sleep 1; echo oops >&2; ${SLEEP_FOREVER}"]
    - name: quiet
      image: ${rt.images.busybox}
      command: ["sh", "-c", "${SLEEP_FOREVER}"]
`,
    );
    const pod = await runPod(file);
    const name = pod.metadata?.name ?? '';
    const before = Date.now();

    const all = await eventually(async () => {
      const r = await klet(['logs', name, '-c', 'lines']);
      expectOk(r);
      expect(r.stdout).toBe('line 1\nline 2\nline 3\nline 4\nline 5\noops\n');
      return r;
    });
    expect(all.stderr).toBe('');
    // Both streams, in the order written (stderr came a second later).

    const tail = await klet(['logs', name, '-c', 'lines', '--tail', '2']);
    expectOk(tail);
    expect(tail.stdout).toBe('line 5\noops\n');

    const ts = await klet(['logs', name, '-c', 'lines', '--timestamps', '--tail', '3']);
    expectOk(ts);
    const tsLines = nonEmptyLines(ts.stdout);
    expect(tsLines).toHaveLength(3);
    const stamps = tsLines.map((l) => {
      const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) (.*)$/.exec(l);
      expect(m, l).not.toBeNull();
      return { t: m![1]!, text: m![2] };
    });
    expect(stamps.map((s) => s.text)).toEqual(['line 4', 'line 5', 'oops']);
    // RFC3339Nano with nine digits sorts as text; and it is about now.
    expect([...stamps.map((s) => s.t)].sort()).toEqual(stamps.map((s) => s.t));
    const first = Date.parse(stamps[0]!.t);
    expect(first).toBeGreaterThan(before - 60_000);
    expect(first).toBeLessThanOrEqual(Date.now());

    const init = await klet(['logs', name, '-c', 'setup']);
    expectOk(init);
    expect(init.stdout).toBe('setting up\n');

    const prev = await klet(['logs', name, '-c', 'lines', '--previous']);
    expect(oneLineError(prev)).toBe(`error: previous terminated container "lines" in pod "${name}" not found`);

    const noC = await klet(['logs', name]);
    const msg = oneLineError(noC);
    expect(msg).toContain(`a container name must be specified for pod default/${name}`);
    for (const c of ['lines', 'quiet', 'setup']) expect(msg).toContain(c);

    const wrongC = await klet(['logs', name, '-c', 'nope']);
    expect(oneLineError(wrongC)).toMatch(/container nope is not valid for pod .*lines.*quiet/);

    // One container: no -c needed.
    const single = await runPod(manifest('single.yaml', simplePod('single', `echo only; ${SLEEP_FOREVER}`)));
    const one = await eventually(async () => {
      const r = await klet(['logs', single.metadata?.name ?? '']);
      expectOk(r);
      expect(r.stdout).toBe('only\n');
      return r;
    });
    expect(one.stderr).toBe('');

    expectOk(await klet(['delete', name, single.metadata?.name ?? '']));
    await expectPodGone(ids(pod));
    await expectPodGone(ids(single));
  });
});
