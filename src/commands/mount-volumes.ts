import { Args, Flags } from '@oclif/core';
import { BaseCommand, outputFlags } from '../base-command.js';

export default class MountVolumes extends BaseCommand<typeof MountVolumes> {
  static override summary = "Set up a pod's volumes without starting it (or tear them down).";
  static override description = `Runs the volume manager for one pod: emptyDir (a tmpfs for medium Memory), hostPath (type checked, *OrCreate created), configMap, secret (on tmpfs), downwardAPI and projected volumes under <root-dir>/pods/<uid>/volumes/<plugin>/<name>, exactly as klet sync and runonce set them up (same UID, same dirs: a later run of the pod uses them), then prints one row per volume: name, plugin, host path, medium, size/used, state.

FILE is a Pod manifest (ConfigMaps and Secrets in the same file are used); POD is a pod klet has a record of (ns/name, name or UID prefix), whose ConfigMaps and Secrets come from its manifest file when it is still there. --objects adds a directory or file of ConfigMaps and Secrets.

A pod klet sync runs from the API server (--kubeconfig) reads its ConfigMaps, Secrets and service account tokens from the API server, as klet sync does: pass the same --kubeconfig (the node's credentials).

--dry-run prints what would be created, mounted and written, and checks every reference (hostPath types, ConfigMap and Secret keys) without touching anything. --unmount unmounts and removes the pod's volume dirs (never a hostPath's contents); it refuses while the pod has running containers. Exit status 1 when a volume fails (its row says why).`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> examples/volumes/pod-with-volumes.yaml',
    '<%= config.bin %> <%= command.id %> examples/volumes/pod-with-volumes.yaml --dry-run',
    '<%= config.bin %> <%= command.id %> default/volumes-demo-node1 -o json',
    '<%= config.bin %> <%= command.id %> examples/volumes/pod-with-volumes.yaml --unmount',
    '<%= config.bin %> <%= command.id %> apps/web --kubeconfig /etc/kubernetes/kubelet.conf',
  ];
  static override args = {
    target: Args.string({ description: 'Pod manifest file, or a pod klet knows (ns/name, name, UID prefix)', required: true }),
  };
  static override flags = {
    ...outputFlags,
    unmount: Flags.boolean({ summary: "Tear the pod's volumes down instead of setting them up.", default: false, exclusive: ['dry-run'] }),
    'dry-run': Flags.boolean({ summary: 'Show what would be done; change nothing.', default: false, exclusive: ['unmount'] }),
    objects: Flags.string({ summary: 'Directory (or file) of ConfigMap and Secret manifests for the pod.' }),
    kubeconfig: Flags.string({ summary: "For a pod from the API server: read its ConfigMaps, Secrets and tokens there (the node's kubeconfig, as given to klet sync)." }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MountVolumes);
    const { mountVolumes, NeedsApiServerError } = await import('../lib/services/mount-volumes.js');
    const mode = flags.unmount ? 'unmount' : flags['dry-run'] ? 'dry-run' : 'mount';
    const result = await mountVolumes(
      { target: args.target, objectsDir: flags.objects, mode },
      {
        rootDir: this.flags['root-dir'],
        nodeName: this.nodeName(),
        signal: this.signal,
        objectApi: flags.kubeconfig === undefined ? undefined : async () => (await import('../lib/kube/node-api.js')).connectNodeApi(flags.kubeconfig!),
        runningContainers: mode === 'unmount' ? (uid) => this.runningContainers(uid) : undefined,
      },
    ).catch((err: unknown) => {
      if (err instanceof NeedsApiServerError) throw new NeedsApiServerError(`${err.message} (--kubeconfig)`);
      throw err;
    });
    const { formatTable, humanBytes } = await import('../lib/util/table.js');
    await this.printObject(result, () => {
      if (result.volumes.length === 0) return `pod ${result.pod}: no volumes`;
      const size = (r: (typeof result.volumes)[number]) =>
        r.sizeBytes === undefined && r.usedBytes === undefined
          ? '-'
          : `${r.sizeBytes === undefined ? '-' : humanBytes(r.sizeBytes)}/${r.usedBytes === undefined ? '-' : humanBytes(r.usedBytes)}`;
      return formatTable(
        ['VOLUME', 'PLUGIN', 'HOST PATH', 'MEDIUM', 'SIZE/USED', 'STATE'],
        result.volumes.map((r) => [r.name, r.plugin || '-', r.hostPath || '-', r.medium || 'disk', size(r), r.message ? `${r.state}: ${r.message}` : r.state]),
      );
    });
    if (result.exitCode !== 0) this.exit(result.exitCode);
  }

  /** Running containers of the pod, from the runtime when one answers (no runtime: nothing runs). */
  private async runningContainers(uid: string): Promise<number> {
    const { CriClient } = await import('../lib/cri/client.js');
    const fs = await import('node:fs');
    const endpoint = this.flags['container-runtime-endpoint'];
    if (endpoint.startsWith('unix://') && !fs.existsSync(endpoint.slice('unix://'.length))) return 0;
    const cri = CriClient.connect(endpoint, { timeoutMs: this.runtimeTimeoutMs() });
    try {
      const { ContainerState } = await import('../lib/cri/index.js');
      const list = await cri.listContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': uid } } });
      return list.containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING).length;
    } finally {
      cri.close();
    }
  }
}
