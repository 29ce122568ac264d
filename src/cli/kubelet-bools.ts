/**
 * The kubelet's boolean flags take `--flag`, `--flag=true` and
 * `--flag=false` (Go's pflag). oclif's boolean flags refuse a value, so
 * these are option flags (true|false) in klet, and a bare `--flag` is
 * rewritten to `--flag=true` before either parser sees it: the kubelet's
 * command lines (kubeadm's, the docs') work as written.
 */

/** Flags of `klet sync` that are booleans in the kubelet. */
export const KUBELET_BOOL_FLAGS: readonly string[] = ['anonymous-auth', 'authentication-token-webhook', 'cgroups-per-qos', 'rotate-certificates', 'rotate-server-certificates', 'seccomp-default'];

/** `--flag` alone (before any `--`) becomes `--flag=true` for the kubelet's booleans. */
export function normalizeKubeletBools(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((a, i) => ((end === -1 || i < end) && a.startsWith('--') && KUBELET_BOOL_FLAGS.includes(a.slice(2)) ? `${a}=true` : a));
}
