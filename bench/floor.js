// The physical floor a kubelet cannot beat, as its own process (so it pays
// the same process start as klet):
//   node bench/floor.js ENDPOINT N IMAGE_ID [PREFIX]
//     start N pods: RunPodSandbox + CreateContainer + StartContainer for the N
//     pods at once (the same concurrency as `klet runonce`), no manifest
//     parsing, no bookkeeping, no status.
//   node bench/floor.js teardown ENDPOINT
//     delete every pod of that runtime: StopContainer (30 s grace, as
//     terminationGracePeriodSeconds) + StopPodSandbox + RemovePodSandbox,
//     all pods at once.
import { CriClient } from '../dist/lib/cri/client.js';

const args = process.argv.slice(2);
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
  const n = Number(nText);
  const cri = CriClient.connect(endpoint);
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const name = `${prefix}${i}`;
      const uid = `${prefix}uid-${i}`;
      const config = {
        metadata: { name, namespace: 'default', uid, attempt: 0 },
        hostname: name,
        logDirectory: `/var/log/pods/default_${name}_${uid}`,
        labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid },
      };
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
        },
      });
      await cri.startContainer({ containerId });
    }),
  );
  cri.close();
}
