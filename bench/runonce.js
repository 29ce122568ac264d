// Benchmark: `klet runonce` of N pods (sandbox + 1 container each, image
// present) against bench/floor.js issuing the same CRI calls with no
// bookkeeping, on one private containerd, alternating klet and floor runs.
// Reports medians, the ratio (budget 1.25x) and klet's peak RSS.
// Usage (as root, after npm run build): node bench/runonce.js [rounds=5] [pods=20]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '../dist/lib/cri/client.js';
import { startManagedRuntime, stopManagedRuntime } from '../dist/lib/runtime/containerd.js';
import { BUSYBOX_IMAGE } from '../dist/lib/runtime/containerd-config.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const rounds = Number(process.argv[2] ?? 5);
const pods = Number(process.argv[3] ?? 20);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-'));
const target = {
  endpoint: `unix://${tmp}/containerd.sock`,
  rootDir: tmp,
  network: { bridge: 'kbench0', subnet: '10.87.0.0/16', name: 'klet-bench' },
};
const manifests = path.join(tmp, 'manifests');
fs.mkdirSync(manifests);
for (let i = 0; i < pods; i++) {
  fs.writeFileSync(
    path.join(manifests, `pod-${String(i).padStart(2, '0')}.yaml`),
    `apiVersion: v1
kind: Pod
metadata:
  name: bench-${i}
spec:
  containers:
    - name: app
      image: ${BUSYBOX_IMAGE}
      command: ["sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]
`,
  );
}
const timeBin = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : null;

/** Remove every pod and log dir, outside the timed region. */
async function clean(cri) {
  const { items } = await cri.listPodSandbox({});
  await Promise.all(
    items.map(async (sb) => {
      await cri.stopPodSandbox({ podSandboxId: sb.id });
      await cri.removePodSandbox({ podSandboxId: sb.id });
    }),
  );
  fs.rmSync(path.join(tmp, 'pods'), { recursive: true, force: true });
  for (const d of fs.readdirSync('/var/log/pods')) if (d.startsWith('default_bench-') || d.startsWith('default_floor-')) fs.rmSync(path.join('/var/log/pods', d), { recursive: true, force: true });
}

function timed(cmd, args) {
  const argv = timeBin ? [timeBin, ['-f', '%M', cmd, ...args]] : [cmd, args];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv[1], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-500)}`);
  const rssKb = timeBin ? Number(r.stderr.trim().split('\n').at(-1)) : NaN;
  return { ms, rssKb };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

await startManagedRuntime(target);
const cri = CriClient.connect(target.endpoint);
try {
  const imageId = (await cri.imageStatus({ image: { image: BUSYBOX_IMAGE } })).image.id;
  const klet = [];
  const floor = [];
  const rss = [];
  const node = process.execPath;
  for (let i = 0; i < rounds; i++) {
    await clean(cri);
    const k = timed(node, [path.join(root, 'bin/run.js'), 'runonce', '--manifest-dir', manifests, '--root-dir', tmp, '--container-runtime-endpoint', target.endpoint, '--node-name', 'bench', '-o', 'json']);
    klet.push(k.ms);
    rss.push(k.rssKb);
    await clean(cri);
    floor.push(timed(node, [path.join(root, 'bench/floor.js'), target.endpoint, String(pods), imageId]).ms);
  }
  await clean(cri);
  const km = median(klet);
  const fm = median(floor);
  const result = {
    pods,
    rounds,
    kletMedianMs: Math.round(km),
    floorMedianMs: Math.round(fm),
    ratio: Number((km / fm).toFixed(2)),
    budget: 1.25,
    kletPeakRssMB: Number.isNaN(median(rss)) ? null : Number((Math.max(...rss) / 1024).toFixed(1)),
    klet: klet.map(Math.round),
    floor: floor.map(Math.round),
  };
  console.log(`klet runonce (${pods} pods)  median ${result.kletMedianMs} ms   runs ${result.klet.join(' ')}`);
  console.log(`CRI floor    (${pods} pods)  median ${result.floorMedianMs} ms   runs ${result.floor.join(' ')}`);
  console.log(`ratio ${result.ratio}x (budget ${result.budget}x): ${result.ratio <= result.budget ? 'within budget' : 'OVER budget'}; klet peak RSS ${result.kletPeakRssMB} MB`);
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
} finally {
  cri.close();
  await stopManagedRuntime(target);
  spawnSync('ip', ['link', 'del', 'kbench0']);
  fs.rmSync(tmp, { recursive: true, force: true });
}
