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

/** Run a lib parser, putting the flag's name in front of its input error. */
export async function forFlag<T>(flag: string, fn: () => T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const { InputError } = await import('./lib/errors.js');
    if (err instanceof InputError) throw new InputError(`--${flag}: ${err.message}`);
    throw err;
  }
}

/** Validate the node name and parse the registration flags. */
export async function registrationOptions(
  flags: NodeRegistrationFlagValues & { kubeconfig: string },
  nodeName: string,
  heartbeat: boolean,
): Promise<import('./lib/services/register-node.js').RegisterNodeOptions> {
  const cfg = await import('./lib/node/config.js');
  await forFlag('node-name', () => cfg.validateNodeName(nodeName));
  const labels = await forFlag('node-labels', () => cfg.parseNodeLabels(flags['node-labels'] ?? ''));
  const taints = await forFlag('register-with-taints', () => cfg.parseTaints(flags['register-with-taints'] ?? ''));
  const kubeReserved = await forFlag('kube-reserved', () => cfg.parseReservation(flags['kube-reserved'] ?? ''));
  const systemReserved = await forFlag('system-reserved', () => cfg.parseReservation(flags['system-reserved'] ?? ''));
  const nodeIP = flags['node-ip'];
  if (nodeIP !== undefined) await forFlag('node-ip', () => cfg.validateNodeIP(nodeIP));
  return {
    kubeconfig: flags.kubeconfig,
    labels,
    taints,
    reserved: cfg.addReservations(kubeReserved, systemReserved),
    maxPods: flags['max-pods'],
    nodeIP,
    heartbeat,
  };
}
