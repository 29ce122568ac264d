/**
 * The flags of joining a cluster, shared by `klet register-node` and
 * `klet sync --kubeconfig` (the kubelet's names and defaults), and their
 * parsing (src/cli/registration.ts) into RegisterNodeOptions with errors naming the flag.
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

export { type NodeRegistrationFlagValues, registrationOptions } from './cli/registration.js';
