/**
 * The real kubelet (built by scripts/build-k8s.sh) joined to a test cluster
 * on a private containerd, to run a test's list against it instead of klet
 * (one at a time: the kubelet removes runtime pods it does not know). Its
 * pod log dir, root dir and certificates are its own, under `dir`; its
 * kubelet server takes client certificates from the cluster's CA, bearer
 * tokens by TokenReview and authorizes with SubjectAccessReview, as klet's
 * defaults do.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { freePort, k8sBinDir } from './cluster.js';

export interface KubeletAgent {
  logFile: string;
  /** The last lines of its log (for failure messages). */
  tail(): string;
  stop(): Promise<void>;
}

export async function startKubeletAgent(o: {
  dir: string;
  endpoint: string;
  kubeconfig: string;
  nodeName: string;
  nodeIP: string;
  port: number;
  clientCaFile: string;
  manifestDir: string;
}): Promise<KubeletAgent> {
  await fsp.mkdir(path.join(o.dir, 'pod-logs'), { recursive: true });
  const config = path.join(o.dir, 'kubelet-config.yaml');
  await fsp.writeFile(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `address: ${o.nodeIP}`,
      `port: ${o.port}`,
      'readOnlyPort: 0',
      'healthzBindAddress: 127.0.0.1',
      `healthzPort: ${await freePort()}`,
      'authentication:',
      '  anonymous: {enabled: false}',
      '  webhook: {enabled: true}',
      `  x509: {clientCAFile: ${o.clientCaFile}}`,
      'authorization: {mode: Webhook}',
      'cgroupDriver: cgroupfs',
      'cgroupsPerQOS: false',
      'enforceNodeAllocatable: []',
      'failSwapOn: false',
      'failCgroupV1: false',
      `staticPodPath: ${o.manifestDir}`,
      `containerRuntimeEndpoint: ${o.endpoint}`,
      `podLogsDir: ${path.join(o.dir, 'pod-logs')}`,
      'resolvConf: /etc/resolv.conf',
      'evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}',
      '',
    ].join('\n'),
  );
  const logFile = path.join(o.dir, 'kubelet.log');
  const out = fs.openSync(logFile, 'a');
  const proc: ChildProcess = spawn(
    path.join(k8sBinDir(), 'kubelet'),
    [`--config=${config}`, `--kubeconfig=${o.kubeconfig}`, `--root-dir=${path.join(o.dir, 'root')}`, `--hostname-override=${o.nodeName}`, `--node-ip=${o.nodeIP}`, '--v=2'],
    { stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  const tail = () => fs.readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
  return {
    logFile,
    tail,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}
