/**
 * The flags of joining a cluster as values (their oclif declarations are in
 * src/node-flags.ts), parsed into RegisterNodeOptions with errors naming the
 * flag, for `klet register-node`. (`klet sync` maps them onto its
 * configuration instead: src/cli/sync.ts, lib/kubeletconfig.)
 */
export interface NodeRegistrationFlagValues {
  'node-labels'?: string;
  'register-with-taints'?: string;
  'kube-reserved'?: string;
  'system-reserved'?: string;
  'max-pods': number;
  'node-ip'?: string;
}

/** The registration options of these flags (reportFailure puts the flag name in front of an error). */
export async function registrationOptions(
  flags: NodeRegistrationFlagValues & { kubeconfig: string },
  nodeName: string,
  heartbeat: boolean,
): Promise<import('../lib/services/register-node.js').RegisterNodeOptions> {
  const { parseRegisterNodeInput } = await import('../lib/services/register-node.js');
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
