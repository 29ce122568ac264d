/**
 * Pod sysctls at admission, as the kubelet checks them (pkg/kubelet/sysctl,
 * component-helpers node/util/sysctl): a pod may set the safe sysctls of this
 * kernel and those the node allows with --allowed-unsafe-sysctls (names or
 * patterns ending in *, each known to be namespaced); any other is refused
 * with reason SysctlForbidden before anything of the pod is made. Pure.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { InputError } from '../errors.js';

export const SYSCTL_FORBIDDEN_REASON = 'SysctlForbidden';

type Namespace = 'IPC' | 'Net';

/** The kubelet's safe sysctls, each with the kernel version from which it is namespaced (pkg/util/kernel). */
const SAFE_SYSCTLS: ReadonlyArray<{ name: string; kernel?: [number, number] }> = [
  { name: 'kernel.shm_rmid_forced' },
  { name: 'net.ipv4.ip_local_port_range' },
  { name: 'net.ipv4.tcp_syncookies' },
  { name: 'net.ipv4.ping_group_range' },
  { name: 'net.ipv4.ip_unprivileged_port_start' },
  { name: 'net.ipv4.ip_local_reserved_ports', kernel: [3, 16] },
  { name: 'net.ipv4.tcp_keepalive_time', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_fin_timeout', kernel: [4, 6] },
  { name: 'net.ipv4.tcp_keepalive_intvl', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_keepalive_probes', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_rmem', kernel: [4, 15] },
  { name: 'net.ipv4.tcp_wmem', kernel: [4, 15] },
];

/** Sysctls known to be namespaced, by name and by prefix (nameToNamespace, prefixToNamespace). */
const NAME_TO_NAMESPACE: ReadonlyMap<string, Namespace> = new Map<string, Namespace>([
  ['kernel.sem', 'IPC'],
  ['kernel.shmall', 'IPC'],
  ['kernel.shmmax', 'IPC'],
  ['kernel.shmmni', 'IPC'],
  ['kernel.shm_rmid_forced', 'IPC'],
  ['kernel.shm', 'IPC'],
  ['kernel.msgmax', 'IPC'],
  ['kernel.msgmnb', 'IPC'],
  ['kernel.msgmni', 'IPC'],
  ['kernel.msg', 'IPC'],
]);
const PREFIX_TO_NAMESPACE: ReadonlyMap<string, Namespace> = new Map<string, Namespace>([
  ['net', 'Net'],
  ['fs.mqueue', 'IPC'],
]);

/** The API's sysctl name limits (core validation SysctlMaxLength, policy validation SysctlContainSlashPatternFmt). */
const SYSCTL_MAX_LENGTH = 253;
const SYSCTL_SEGMENT = '[a-z0-9]([-_a-z0-9]*[a-z0-9])?';
const SYSCTL_PATTERN_SEGMENT = '([a-z0-9][-_a-z0-9]*)?[a-z0-9*]';
const SYSCTL_PATTERN_FMT = `(${SYSCTL_SEGMENT}[\\./])*${SYSCTL_PATTERN_SEGMENT}`;
const SYSCTL_PATTERN = new RegExp(`^${SYSCTL_PATTERN_FMT}$`);

/** The safe sysctls of a kernel whose release (uname -r, os.release()) is given; all of them when it cannot be read as a version. */
export function safeSysctls(kernelRelease: string): string[] {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  const at = m ? [Number(m[1]), Number(m[2])] : undefined;
  return SAFE_SYSCTLS.filter((s) => s.kernel === undefined || (at !== undefined && (at[0]! > s.kernel[0] || (at[0] === s.kernel[0] && at[1]! >= s.kernel[1])))).map((s) => s.name);
}

/** A sysctl name with / as its separator, in the dotted form (net/ipv4/conf/eno2.100/rp_filter → net.ipv4.conf.eno2/100.rp_filter). */
export function normalizeSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

function namespaceOf(name: string): Namespace | undefined {
  const known = NAME_TO_NAMESPACE.get(name);
  if (known !== undefined) return known;
  for (const [prefix, ns] of PREFIX_TO_NAMESPACE) if (name.startsWith(`${prefix}.`)) return ns;
  return undefined;
}

export interface SysctlAllowlist {
  readonly sysctls: ReadonlyMap<string, Namespace>;
  readonly prefixes: ReadonlyMap<string, Namespace>;
}

/**
 * The allowlist of these sysctls and patterns (the kubelet's NewAllowlist):
 * an invalid pattern, or one not known to be namespaced, is an InputError
 * with the kubelet's message.
 */
export function sysctlAllowlist(patterns: readonly string[]): SysctlAllowlist {
  const sysctls = new Map<string, Namespace>();
  const prefixes = new Map<string, Namespace>();
  for (const p of patterns) {
    if (p.length > SYSCTL_MAX_LENGTH || !SYSCTL_PATTERN.test(p)) {
      throw new InputError(`sysctl ${JSON.stringify(p)} must have at most ${SYSCTL_MAX_LENGTH} characters and match regex ${SYSCTL_PATTERN_FMT}`);
    }
    let name = normalizeSysctlName(p);
    const star = name.indexOf('*');
    if (star !== -1) name = name.slice(0, star);
    const ns = namespaceOf(name);
    if (ns === undefined) throw new InputError(`the sysctls ${JSON.stringify(name)} are not known to be namespaced`);
    (star === -1 ? sysctls : prefixes).set(name, ns);
  }
  return { sysctls, prefixes };
}

/** The allowlist of a node: this kernel's safe sysctls and the unsafe ones it allows (--allowed-unsafe-sysctls). */
export function nodeSysctlAllowlist(kernelRelease: string, allowedUnsafe: readonly string[]): SysctlAllowlist {
  return sysctlAllowlist([...safeSysctls(kernelRelease), ...allowedUnsafe]);
}

function validateSysctl(list: SysctlAllowlist, raw: string, hostNet: boolean, hostIPC: boolean): string | null {
  const name = normalizeSysctlName(raw);
  const check = (ns: Namespace): string | null =>
    (ns === 'IPC' && hostIPC) || (ns === 'Net' && hostNet) ? `${JSON.stringify(name)} not allowed with host ${ns} enabled` : null;
  const exact = list.sysctls.get(name);
  if (exact !== undefined) return check(exact);
  for (const [prefix, ns] of list.prefixes) if (name.startsWith(prefix)) return check(ns);
  return `${JSON.stringify(name)} not allowlisted`;
}

/** Admit the pod's sysctls (spec.securityContext.sysctls), or the kubelet's reason and message (the event's; the status prefixes "Pod was rejected: "). */
export function admitSysctls(pod: V1Pod, list: SysctlAllowlist): { reason: string; message: string } | null {
  for (const s of pod.spec?.securityContext?.sysctls ?? []) {
    const err = validateSysctl(list, s.name, pod.spec?.hostNetwork === true, pod.spec?.hostIPC === true);
    if (err !== null) return { reason: SYSCTL_FORBIDDEN_REASON, message: `forbidden sysctl: ${err}` };
  }
  return null;
}
