// Benchmark: one steady-state PLEG relist (ListPodSandbox + ListContainers,
// grouping by pod UID, diff against the previous relist, no changes) against
// the bare pair of list calls it cannot avoid, on a private containerd with
// P pods (a sandbox + 1 running container each, created directly through
// CRI with the kubelet's labels; default 110, the kubelet's max pods).
//
// Method: one warm-up relist (which also fills the snapshot: the first
// relist reports every pod as new), then N rounds (default 50); each round
// times (a) the bare pair `Promise.all([ListPodSandbox({}), ListContainers({})])`
// and (b) `pleg.relist()`, alternating which goes first, with
// process.hrtime.bigint() around each. Both use the same CriClient (same
// channel, same decoding); (b) - (a) is the PLEG's own cost, also timed
// alone in process (grouping + diff of one real answer). Reports medians,
// p99 (nearest rank) and the ratio of medians (budget 3x). It also checks
// that each steady relist made exactly one call of each list and returned no
// events. Everything it created is removed, and its runtime stopped.
//
// Usage (as root, after npm run build): node bench/pleg.js [rounds=50] [pods=110] [--json]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CriClient } from '../dist/lib/cri/client.js';
import { buildPodRecords, diffPodRecords, GenericPLEG } from '../dist/lib/pleg/index.js';
import { startManagedRuntime, stopManagedRuntime } from '../dist/lib/runtime/containerd.js';
import { BUSYBOX_IMAGE } from '../dist/lib/runtime/containerd-config.js';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const rounds = Number(positional[0] ?? 50);
const pods = Number(positional[1] ?? 110);
const BUDGET = 3;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-pleg-'));
const target = {
  endpoint: `unix://${tmp}/containerd.sock`,
  rootDir: tmp,
  network: { bridge: 'kbenchpleg0', subnet: '10.86.0.0/16', name: 'klet-bench-pleg' },
};
const HOST_NETWORK = 2; // NamespaceMode.NODE: no CNI per sandbox, the setup is faster and the lists are the same

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** Nearest-rank percentile. */
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const round2 = (x) => Number(x.toFixed(2));

/** Runs `fn` over `items`, at most `limit` at a time. */
async function pool(items, limit, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

async function createPod(cri, i) {
  const name = `pleg-bench-${i}`;
  const uid = `pleg-bench-uid-${i}`;
  const labels = { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid };
  const config = {
    metadata: { name, namespace: 'default', uid, attempt: 0 },
    logDirectory: path.join(tmp, 'logs', uid),
    labels,
    linux: { securityContext: { namespaceOptions: { network: HOST_NETWORK } } },
  };
  fs.mkdirSync(config.logDirectory, { recursive: true });
  const { podSandboxId } = await cri.runPodSandbox({ config });
  const { containerId } = await cri.createContainer({
    podSandboxId,
    sandboxConfig: config,
    config: {
      metadata: { name: 'app', attempt: 0 },
      image: { image: BUSYBOX_IMAGE },
      command: ['sh', '-c', "trap 'exit 0' TERM; sleep 2147483647 & wait"],
      logPath: 'app/0.log',
      labels: { ...labels, 'io.kubernetes.container.name': 'app' },
      annotations: { 'io.kubernetes.container.hash': 'bench', 'io.kubernetes.container.restartCount': '0' },
    },
  });
  await cri.startContainer({ containerId });
}

async function clean(cri) {
  const { items } = await cri.listPodSandbox({});
  await pool(items, 8, async (sb) => {
    await cri.stopPodSandbox({ podSandboxId: sb.id });
    await cri.removePodSandbox({ podSandboxId: sb.id });
  });
}

await startManagedRuntime(target, { timeoutMs: 60_000 });
const cri = CriClient.connect(target.endpoint);
try {
  const setup0 = process.hrtime.bigint();
  await pool(Array.from({ length: pods }, (_, i) => i), 8, (i) => createPod(cri, i));
  const setupMs = ms(setup0);

  // Count the PLEG's calls without changing them.
  const calls = { listPodSandbox: 0, listContainers: 0 };
  const counted = {
    listPodSandbox: (req, opts) => (calls.listPodSandbox++, cri.listPodSandbox(req, opts)),
    listContainers: (req, opts) => (calls.listContainers++, cri.listContainers(req, opts)),
  };
  const pleg = new GenericPLEG({ cri: counted });
  const first = await pleg.relist();
  while (pleg.events.tryTake() !== undefined);
  const records = pleg.podRecords();
  const running = [...records.values()].filter((r) => r.containers.some((c) => c.state === 'running')).length;
  if (records.size !== pods || running !== pods) throw new Error(`expected ${pods} pods with a running container, the PLEG sees ${records.size} (${running} running)`);
  // Warm-up of both paths.
  for (let i = 0; i < 5; i++) {
    await Promise.all([cri.listPodSandbox({}), cri.listContainers({})]);
    await pleg.relist();
  }

  const bare = [];
  const relist = [];
  let steadyEvents = 0;
  const before = { ...calls };
  const timeBare = async () => {
    const t0 = process.hrtime.bigint();
    await Promise.all([cri.listPodSandbox({}), cri.listContainers({})]);
    bare.push(ms(t0));
  };
  const timeRelist = async () => {
    const t0 = process.hrtime.bigint();
    const events = await pleg.relist();
    relist.push(ms(t0));
    steadyEvents += events.length;
    if (pleg.lastRelist.error !== null) throw new Error(`relist failed: ${pleg.lastRelist.error}`);
  };
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      await timeBare();
      await timeRelist();
    } else {
      await timeRelist();
      await timeBare();
    }
  }
  // The PLEG's own work alone, in process, on one real pair of answers:
  // grouping + diff against the same state (no RPC, no load-dependent I/O).
  const [sbs, ctrs] = await Promise.all([cri.listPodSandbox({}), cri.listContainers({})]);
  const prev = buildPodRecords(sbs.items, ctrs.containers);
  const pure = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    const events = diffPodRecords(prev, buildPodRecords(sbs.items, ctrs.containers), 0);
    pure.push(ms(t0));
    if (events.length !== 0) throw new Error('diff of identical lists produced events');
  }
  const callsPerRelist = {
    listPodSandbox: (calls.listPodSandbox - before.listPodSandbox) / rounds,
    listContainers: (calls.listContainers - before.listContainers) / rounds,
  };

  const result = {
    pods,
    containers: pods,
    rounds,
    setupMs: Math.round(setupMs),
    firstRelistEvents: first.length,
    steadyEvents,
    callsPerRelist,
    bareMedianMs: round2(median(bare)),
    bareP99Ms: round2(percentile(bare, 99)),
    relistMedianMs: round2(median(relist)),
    relistP99Ms: round2(percentile(relist, 99)),
    groupAndDiffMedianMs: Number(median(pure).toFixed(3)),
    ratio: round2(median(relist) / median(bare)),
    p99Ratio: round2(percentile(relist, 99) / percentile(bare, 99)),
    budget: BUDGET,
    loadavg: os.loadavg().map(round2),
  };
  console.log(`bare ListPodSandbox+ListContainers (${pods} pods)  median ${result.bareMedianMs} ms  p99 ${result.bareP99Ms} ms`);
  console.log(`PLEG relist + diff, steady        (${pods} pods)  median ${result.relistMedianMs} ms  p99 ${result.relistP99Ms} ms`);
  console.log(`of which grouping + diff alone (in process, no RPC)  median ${result.groupAndDiffMedianMs} ms`);
  console.log(
    `ratio ${result.ratio}x median, ${result.p99Ratio}x p99 (budget ${BUDGET}x): ${result.ratio <= BUDGET ? 'within budget' : 'OVER budget'}; ` +
      `${rounds} rounds; calls per relist ${callsPerRelist.listPodSandbox}+${callsPerRelist.listContainers}; ` +
      `steady events ${steadyEvents}; load ${result.loadavg.join(' ')}`,
  );
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
  if (steadyEvents !== 0 || callsPerRelist.listPodSandbox !== 1 || callsPerRelist.listContainers !== 1) process.exitCode = 1;
} finally {
  await clean(cri).catch((err) => console.error(`cleanup: ${err.message}`));
  cri.close();
  await stopManagedRuntime(target);
  spawnSync('ip', ['link', 'del', target.network.bridge]);
  fs.rmSync(tmp, { recursive: true, force: true });
}
