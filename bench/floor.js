// The physical floor a kubelet cannot beat, as its own process (so it pays
// the same process start as klet):
//   node bench/floor.js ENDPOINT N IMAGE_ID [PREFIX]
//     start N pods: RunPodSandbox + CreateContainer + StartContainer for the N
//     pods at once (the same concurrency as `klet runonce`), no manifest
//     parsing, no bookkeeping, no status.
//   node bench/floor.js ENDPOINT N IMAGE_ID PREFIX --pod-config
//     the same calls with what the kubelet (and klet) put in them for such a
//     pod: the sandbox's DNS config and security context, the container's two
//     file mounts (/etc/hosts, /dev/termination-log; files written first, in
//     /tmp/klet-floor-PREFIX, which
//     the caller removes), masked and read-only /proc paths, CPU shares and
//     OOM score (BestEffort). The runtime's share of a kubelet's pod start, so
//     klet's own overhead can be told from the config's cost to runc.
//   node bench/floor.js ENDPOINT N IMAGE_ID PREFIX --busy-first MS
//     the floor with its main thread busy for MS before its first call: what
//     a later start costs the end (klet's first sandbox request goes out
//     later than the floor's). `npm run bench -- --calibrate`.
//   node bench/floor.js ENDPOINT N IMAGE_ID PREFIX --burn DUTY,FROM,TO
//     the floor with a second thread using DUTY (0-1) of a core from FROM to
//     TO ms after start: what CPU spent beside the runtime during the burst
//     costs the end (klet's own CPU there). `npm run bench -- --calibrate`.
//   node bench/floor.js teardown ENDPOINT
//     delete every pod of that runtime: StopContainer (30 s grace, as
//     terminationGracePeriodSeconds) + StopPodSandbox + RemovePodSandbox,
//     all pods at once.
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { CriClient } from '../dist/lib/cri/client.js';
// klet's own lists of the kubelet's defaults (not written twice); loading them adds ~4 ms to the floor's start.
import { DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS } from '../dist/lib/kuberuntime/config.js';

const args = process.argv.slice(2);
/** A bad option: one line naming it, exit 2. */
function usage(msg) {
  process.stderr.write(`floor: ${msg}\n`);
  process.exit(2);
}
if (args[0] === 'teardown') {
  const cri = CriClient.connect(args[1]);
  const { items } = await cri.listPodSandbox({});
  await Promise.all(
    items.map(async (sb) => {
      const { containers } = await cri.listContainers({ filter: { podSandboxId: sb.id } });
      await Promise.all(containers.map((c) => cri.stopContainer({ containerId: c.id, timeout: 30n })));
      await cri.stopPodSandbox({ podSandboxId: sb.id });
      await cri.removePodSandbox({ podSandboxId: sb.id });
    }),
  );
  cri.close();
} else {
  const [endpoint, nText, imageId, prefix = 'floor-'] = args;
  const podConfig = args.includes('--pod-config');
  const option = (name) => {
    if (!args.includes(name)) return undefined;
    const v = args[args.indexOf(name) + 1];
    return v === undefined || v.startsWith('--') ? usage(`${name}: needs a value`) : v;
  };
  const burn = option('--burn');
  if (burn !== undefined) {
    const [duty, from, to] = burn.split(',').map(Number);
    if (!(duty > 0 && duty < 1) || !(from >= 0) || !(to > from)) usage(`--burn ${burn}: expected DUTY,FROM,TO with 0 < DUTY < 1 and FROM < TO (ms)`);
    // A busy slice of 20·DUTY ms in every 20 ms, on its own thread (the floor's calls are not delayed).
    const code = `const { workerData: { duty, from, to, t0 } } = require('node:worker_threads');
const now = () => performance.timeOrigin + performance.now();
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
while (now() < t0 + from) pause(5);
while (now() < t0 + to) { const s = now(); while (now() - s < 20 * duty); pause(20 * (1 - duty)); }`;
    new Worker(code, { eval: true, workerData: { duty, from, to, t0: performance.timeOrigin } }).unref();
  }
  const busy = option('--busy-first');
  if (busy !== undefined) {
    const ms = Number(busy);
    if (!(ms >= 0)) usage(`--busy-first ${busy}: expected milliseconds`);
    for (const t = performance.now(); performance.now() - t < ms; );
  }
  const n = Number(nText);
  const cri = CriClient.connect(endpoint);
  // What the kubelet sets for a BestEffort pod with a default security context (klet sends the same).
  const UNCONFINED = { profileType: 1 };
  const NAMESPACES = { network: 0, pid: 1, ipc: 0 };
  const dns = podConfig ? fs.readFileSync('/etc/resolv.conf', 'utf8').split('\n').filter((l) => l.startsWith('nameserver ')).map((l) => l.split(/\s+/)[1]) : [];
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const name = `${prefix}${i}`;
      const uid = `${prefix}uid-${i}`;
      const config = {
        metadata: { name, namespace: 'default', uid, attempt: 0 },
        hostname: name,
        logDirectory: `/var/log/pods/default_${name}_${uid}`,
        labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid },
        ...(podConfig ? { dnsConfig: { servers: dns }, linux: { securityContext: { namespaceOptions: NAMESPACES, seccomp: UNCONFINED } } } : {}),
      };
      let extra = {};
      if (podConfig) {
        const dir = `/tmp/klet-floor-${prefix}/${uid}`;
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'etc-hosts'), `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n`);
        fs.writeFileSync(path.join(dir, 'termination-log'), '');
        extra = {
          mounts: [
            { containerPath: '/etc/hosts', hostPath: path.join(dir, 'etc-hosts') },
            { containerPath: '/dev/termination-log', hostPath: path.join(dir, 'termination-log') },
          ],
          linux: {
            resources: { cpuShares: 2n, oomScoreAdj: 1000n },
            securityContext: { namespaceOptions: NAMESPACES, maskedPaths: DEFAULT_MASKED_PATHS, readonlyPaths: DEFAULT_READONLY_PATHS, seccomp: UNCONFINED },
          },
        };
      }
      const { podSandboxId } = await cri.runPodSandbox({ config });
      const { containerId } = await cri.createContainer({
        podSandboxId,
        sandboxConfig: config,
        config: {
          metadata: { name: 'app', attempt: 0 },
          image: { image: imageId },
          command: ['sh', '-c', "trap 'exit 0' TERM; sleep 2147483647 & wait"],
          logPath: 'app/0.log',
          labels: { 'io.kubernetes.container.name': 'app', 'io.kubernetes.pod.uid': uid },
          ...extra,
        },
      });
      await cri.startContainer({ containerId });
    }),
  );
  cri.close();
}
