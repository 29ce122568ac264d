import { configDefaults, defineConfig } from 'vitest/config';
import { missingClusterInfra } from './test/helpers/cluster.js';

// Cluster tests (test/cluster) need a kube-apiserver built by scripts/build-k8s.sh,
// etcd and kubectl. They run whenever that is present, and always in CI
// (.ci/run builds it and sets KLET_CLUSTER_TESTS=required), where a missing
// piece fails them instead of leaving them out.
const clusterRequired = process.env.KLET_CLUSTER_TESTS === 'required';
const clusterMissing = missingClusterInfra();
if (!clusterRequired && clusterMissing.length > 0) {
  process.stderr.write(`note: cluster tests (test/cluster) left out: missing ${clusterMissing.join(', ')}\n`);
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(clusterRequired || clusterMissing.length === 0 ? [] : ['test/cluster/**'])],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests each start a private containerd; on 2 cores run files one at a time.
    fileParallelism: false,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
