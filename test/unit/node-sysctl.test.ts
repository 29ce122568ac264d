import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admitPods } from '../../src/lib/node/admission.js';
import { admitSysctls, nodeSysctlAllowlist, normalizeSysctlName, safeSysctls, sysctlAllowlist } from '../../src/lib/node/sysctl.js';

const pod = (sysctls: Array<[string, string]>, extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  metadata: { name: 'p', uid: 'p' },
  spec: { containers: [{ name: 'c', image: 'i' }], securityContext: { sysctls: sysctls.map(([name, value]) => ({ name, value })) }, ...extra },
});

describe('sysctls at admission (pkg/kubelet/sysctl)', () => {
  it("the safe set follows the kernel version (the kubelet's SafeSysctlAllowlist)", () => {
    expect(safeSysctls('6.1.0-18-amd64')).toHaveLength(12);
    const old = safeSysctls('4.4.0');
    expect(old).toContain('net.ipv4.ip_local_reserved_ports');
    expect(old).not.toContain('net.ipv4.tcp_keepalive_time');
    expect(safeSysctls('4.15.0')).toContain('net.ipv4.tcp_rmem');
    expect(safeSysctls('4.14.9')).not.toContain('net.ipv4.tcp_rmem');
  });

  it('rejects an unsafe sysctl the node does not allow, with the reason and message of the kubelet', () => {
    const list = nodeSysctlAllowlist('6.1.0', []);
    expect(admitSysctls(pod([['kernel.msgmax', '10000000000']]), list)).toEqual({ reason: 'SysctlForbidden', message: 'forbidden sysctl: "kernel.msgmax" not allowlisted' });
    expect(admitSysctls(pod([['kernel.shm_rmid_forced', '1'], ['net.ipv4.ip_local_port_range', '1024 65535']]), list)).toBeNull();
    expect(admitSysctls(pod([]), list)).toBeNull();
    // A slash-separated name is the dotted one.
    expect(admitSysctls(pod([['kernel/shm_rmid_forced', '1']]), list)).toBeNull();
    expect(normalizeSysctlName('net/ipv4/conf/eno2.100/rp_filter')).toBe('net.ipv4.conf.eno2/100.rp_filter');
  });

  it('admits what --allowed-unsafe-sysctls allows, names and patterns, but no Net sysctl on the host network', () => {
    const list = nodeSysctlAllowlist('6.1.0', ['kernel.msg*', 'net.core.somaxconn']);
    expect(admitSysctls(pod([['kernel.msgmax', '1'], ['net.core.somaxconn', '1024']]), list)).toBeNull();
    expect(admitSysctls(pod([['net.core.somaxconn', '1024']], { hostNetwork: true }), list)).toEqual({
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled',
    });
    expect(admitSysctls(pod([['kernel.shm_rmid_forced', '1']], { hostIPC: true }), list)?.message).toBe('forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled');
  });

  it("refuses an allowlist entry that is not a sysctl pattern or not namespaced, with the kubelet's messages", () => {
    expect(() => sysctlAllowlist(['kernel.msg*'])).not.toThrow();
    expect(() => sysctlAllowlist(['Kernel.X'])).toThrow('sysctl "Kernel.X" must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]');
    expect(() => sysctlAllowlist(['vm.swappiness'])).toThrow('the sysctls "vm.swappiness" are not known to be namespaced');
    expect(() => sysctlAllowlist(['net'])).toThrow('the sysctls "net" are not known to be namespaced');
  });

  it('admitPods checks sysctls first: the pod is rejected SysctlForbidden, "Pod was rejected: " in its status', () => {
    const node = { allocatable: { cpuMilli: 1000, memoryBytes: 1e9, pods: 10 }, labels: {}, taints: [], sysctls: nodeSysctlAllowlist('6.1.0', []) };
    const bad = pod([['kernel.msgmax', '1']], { os: { name: 'windows' } });
    const { admitted, rejected } = admitPods([bad, pod([['net.ipv4.tcp_syncookies', '1']])], [], node, 'n');
    expect(admitted).toHaveLength(1);
    expect(rejected).toEqual([{ pod: bad, reason: 'SysctlForbidden', message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted' }]);
  });
});
