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

/**
 * The container manager's flags (the kubelet's names and defaults), shared by
 * `klet sync`, `klet runonce` and `klet run-pod`; src/cli/cgroups.ts maps
 * them through the one KubeletConfiguration path (lib/kubeletconfig).
 */
export const cgroupFlags = {
  'cgroups-per-qos': Flags.string({
    summary: "Create the QoS cgroup hierarchy (cgroupsPerQOS): each pod in <cgroup-root>/kubepods/{burstable,besteffort}/pod<uid> (Guaranteed ones directly in kubepods) with the pod's limits. false: the runtime's default cgroups. Default: true.",
    options: ['true', 'false'],
  }),
  'cgroup-root': Flags.string({ summary: "Root cgroup (a cgroupfs path that must exist) of the pods' cgroups. Default: /." }),
  'cgroup-driver': Flags.string({ summary: "How cgroups are made: cgroupfs (directly in /sys/fs/cgroup) or systemd (pod and QoS cgroups as transient systemd slices, e.g. kubepods-burstable-pod<uid>.slice, over D-Bus; the runtime must use systemd cgroups too: SystemdCgroup = true in containerd). Must match the runtime's. Default: cgroupfs.", options: ['cgroupfs', 'systemd'] }),
  'enforce-node-allocatable': Flags.string({
    summary: 'Node allocatable enforcement (enforceNodeAllocatable): pods (kubepods gets the capacity less --kube-reserved and --system-reserved) or none. Default: pods.',
  }),
};

/** What a one-shot command (runonce, run-pod) takes besides cgroupFlags: the reservations kubepods is sized with. */
export const reservationFlags = {
  'kube-reserved': nodeRegistrationFlags['kube-reserved'],
  'system-reserved': nodeRegistrationFlags['system-reserved'],
};

export { type NodeRegistrationFlagValues, registrationOptions } from './cli/registration.js';
