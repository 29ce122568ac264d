/**
 * The flags of joining a cluster, shared by `klet register-node` and
 * `klet sync --kubeconfig` (the kubelet's names and defaults), and their
 * parsing into RegisterNodeOptions with errors naming the flag.
 */
import { Flags } from '@oclif/core';

export const nodeRegistrationFlags = {
  'node-labels': Flags.string({ summary: 'Labels to add when registering the node, key=value,... (kubernetes.io/k8s.io keys only those NodeRestriction allows).' }),
  'register-with-taints': Flags.string({ summary: 'Taints to register the node with, key=value:Effect,... (Effect NoSchedule, PreferNoSchedule or NoExecute).' }),
  'kube-reserved': Flags.string({ summary: 'Resources reserved for Kubernetes components, cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=1000.' }),
  'system-reserved': Flags.string({ summary: 'Resources reserved for the OS, same form as --kube-reserved.' }),
  'max-pods': Flags.integer({ summary: 'Number of pods this node can run (status.capacity.pods).', default: 110, min: 1 }),
  'node-ip': Flags.string({ summary: "The node's InternalIP address. Default: the address of the default route's interface." }),
};

export interface NodeRegistrationFlagValues {
  'node-labels'?: string;
  'register-with-taints'?: string;
  'kube-reserved'?: string;
  'system-reserved'?: string;
  'max-pods': number;
  'node-ip'?: string;
}

/** The registration options of these flags (errors name the flag through the base command). */
export async function registrationOptions(
  flags: NodeRegistrationFlagValues & { kubeconfig: string },
  nodeName: string,
  heartbeat: boolean,
): Promise<import('./lib/services/register-node.js').RegisterNodeOptions> {
  const { parseRegisterNodeInput } = await import('./lib/services/register-node.js');
  return parseRegisterNodeInput(
    {
      kubeconfig: flags.kubeconfig,
      nodeLabels: flags['node-labels'],
      registerWithTaints: flags['register-with-taints'],
      kubeReserved: flags['kube-reserved'],
      systemReserved: flags['system-reserved'],
      maxPods: flags['max-pods'],
      nodeIp: flags['node-ip'],
    },
    nodeName,
    heartbeat,
  );
}
