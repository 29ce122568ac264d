// The physical floor for `klet runonce` of N pods: the same CRI calls a
// kubelet must make per pod (RunPodSandbox, CreateContainer, StartContainer),
// issued back to back for N pods at once, with no manifest parsing, no
// bookkeeping, no status. Run as its own process so it pays the same
// process start as klet.
// Usage: node bench/floor.js ENDPOINT N IMAGE_ID
import { CriClient } from '../dist/lib/cri/client.js';

const [endpoint, nText, imageId] = process.argv.slice(2);
const n = Number(nText);
const cri = CriClient.connect(endpoint);
await Promise.all(
  Array.from({ length: n }, async (_, i) => {
    const name = `floor-${i}`;
    const uid = `floor-uid-${i}`;
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
