/**
 * The tests' control plane (etcd + kube-apiserver, see startTestCluster) for
 * shell scripts: `node --import tsx test/helpers/control-plane-main.ts DIR
 * NODE [NAMESPACE…]` starts it with a node identity NODE, makes each
 * namespace as ensureNamespace does, writes DIR/env (ADMIN_KUBECONFIG,
 * NODE_KUBECONFIG, KUBECTL, shell syntax) once it is ready, and stops it
 * (removing its files) on SIGTERM or SIGINT. Used by
 * scripts/compare-resources.sh.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ensureNamespace, kubectlBin, startTestCluster } from './cluster.js';

const [dir, node, ...namespaces] = process.argv.slice(2);
if (!dir || !node) {
  console.error('usage: control-plane-main.ts DIR NODE [NAMESPACE…]');
  process.exit(2);
}
const cluster = await startTestCluster({ nodes: [node] });
const stopped = new Promise<void>((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
try {
  for (const ns of namespaces) await ensureNamespace(cluster, ns);
  const env = { ADMIN_KUBECONFIG: cluster.adminKubeconfig, NODE_KUBECONFIG: cluster.nodes[node]!.kubeconfig, KUBECTL: kubectlBin() };
  fs.writeFileSync(path.join(dir, 'env'), Object.entries(env).map(([k, v]) => `${k}='${v}'\n`).join(''));
  await stopped;
} finally {
  await cluster.stop();
}
