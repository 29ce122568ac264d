import { Flags } from '@oclif/core';
import { RuntimeCommand, outputFlags } from '../base-command.js';
import { nodeRegistrationFlags, registrationOptions } from '../node-flags.js';

export default class RegisterNode extends RuntimeCommand<typeof RegisterNode> {
  static override summary = 'Register this node with a Kubernetes API server and keep its status and lease fresh.';
  static override description = `Creates the Node object for --node-name in the API server of --kubeconfig, or reconciles an existing one, as the kubelet does on start-up: status.capacity and allocatable (cpu, memory, pods, ephemeral-storage of the root dir's filesystem, hugepages; allocatable is capacity minus --kube-reserved, --system-reserved and the default hard eviction thresholds memory.available<100Mi and nodefs.available<10%), the MemoryPressure, DiskPressure, PIDPressure and Ready conditions with the kubelet's reasons and messages, addresses, nodeInfo (machine ID, system UUID, boot ID, kernel, OS image, containerRuntimeVersion from CRI, kubeletVersion v<Kubernetes version klet follows>+klet.<klet version>, e.g. v1.34.4+klet.0.1.0), the runtime's images and the standard labels. --node-labels and --register-with-taints apply when the Node is created, as with the kubelet. It also renews the node's Lease in kube-node-lease once.

With --heartbeat it stays in the foreground like the kubelet: the Lease is renewed every 10 s (leaseDurationSeconds 40, owned by the Node) and the status recomputed every 10 s and sent when it changed or every 5 minutes; API server errors are logged and retried with back-off. SIGINT or SIGTERM stops it; the Lease then goes stale after 40 s.

The kubeconfig's user should be the node's identity (system:node:<name> in group system:nodes), so the Node authorizer and NodeRestriction allow exactly what a kubelet may do. Credentials never appear in messages.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf',
    '<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf --node-name node1 --heartbeat',
    "<%= config.bin %> <%= command.id %> --kubeconfig kubelet.conf --node-labels node.kubernetes.io/pool=edge --register-with-taints 'dedicated=edge:NoSchedule' --kube-reserved cpu=100m,memory=256Mi --max-pods 50 -o yaml",
  ];
  static override flags = {
    ...outputFlags,
    kubeconfig: Flags.string({ summary: 'Kubeconfig with the API server and the node credentials.', required: true }),
    ...nodeRegistrationFlags,
    heartbeat: Flags.boolean({ summary: 'Stay in the foreground renewing the Lease and node status, like the kubelet.', default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RegisterNode);
    const nodeName = this.nodeName();
    const options = await registrationOptions(flags, nodeName, flags.heartbeat);
    const { connectNodeApi } = await import('../lib/kube/node-api.js');
    // Its errors name the kubeconfig file already.
    const api = await connectNodeApi(flags.kubeconfig);
    const { logRegisterNodeEvent, registerNode } = await import('../lib/services/register-node.js');
    const { log } = await import('../lib/log.js');

    const deps = await this.deps();
    const result = await registerNode(options, {
      ...deps,
      kletVersion: (await import('../lib/node/version.js')).kubeletVersion(this.config.version),
      api,
      onEvent: (e) => logRegisterNodeEvent(e, nodeName, log),
    }).finally(() => api.close());
    // --heartbeat runs until SIGINT/SIGTERM and then ends normally, as the kubelet does.
    if (flags.heartbeat) return;
    const node = result.node;
    await this.printObject(node, () => {
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      const cap = node.status?.capacity ?? {};
      const alloc = node.status?.allocatable ?? {};
      return [
        `Node:        ${node.metadata?.name} (${result.created ? 'created' : 'updated'}) on ${result.server}`,
        `Ready:       ${ready?.status ?? 'Unknown'} (${ready?.reason ?? ''}: ${ready?.message ?? ''})`,
        `Capacity:    cpu=${cap.cpu} memory=${cap.memory} pods=${cap.pods} ephemeral-storage=${cap['ephemeral-storage']}`,
        `Allocatable: cpu=${alloc.cpu} memory=${alloc.memory} pods=${alloc.pods} ephemeral-storage=${alloc['ephemeral-storage']}`,
        `Addresses:   ${(node.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`).join(' ')}`,
        `Runtime:     ${node.status?.nodeInfo?.containerRuntimeVersion ?? ''}`,
      ].join('\n');
    });
  }
}
