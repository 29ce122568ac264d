import { Flags } from '@oclif/core';
import { BaseCommand, outputFlags } from '../../base-command.js';

export default class RuntimeStart extends BaseCommand<typeof RuntimeStart> {
  static override summary = 'Start the klet-managed containerd on the runtime endpoint.';
  static override description = `Starts containerd (from PATH) detached, with its own root, state and socket under <root-dir>/containerd, a CNI bridge network (bridge + host-local + portmap from containernetworking-plugins), restrict_oom_score_adj = true, and a sandbox image klet builds locally. The sandbox image and a busybox image are built and imported, so pods run without any registry. Reuses this root dir's managed runtime when it is already running on the same endpoint (running on another, it is an error naming the endpoint it serves). Starts on one endpoint are serialised by a lock, so two never both start a containerd; an endpoint already served by another root dir's klet-managed containerd is an error naming that root dir and a private socket to use instead.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --container-runtime-endpoint unix:///run/klet/containerd.sock --root-dir /tmp/klet',
    '<%= config.bin %> <%= command.id %> --cgroup-driver systemd',
  ];
  static override flags = {
    ...outputFlags,
    'cgroup-driver': Flags.string({
      summary: "How runc makes the containers' cgroups: cgroupfs, or systemd (SystemdCgroup = true: systemd scopes). Must be the driver klet runs pods with (--cgroup-driver of runonce and sync). Default: cgroupfs.",
      options: ['cgroupfs', 'systemd'],
    }),
    'pod-cidr': Flags.string({
      summary: 'IPv4 range for pod IPs. Default: 10.88.0.0/16 on bridge klet0 for the default root dir, else a /24 in 10.90.0.0/16 derived from the root dir.',
    }),
  };

  async run(): Promise<void> {
    const { startManagedRuntime, networkFor, parsePodCidr } = await import('../../lib/runtime/containerd.js');
    const cidr = this.flags['pod-cidr'] === undefined ? undefined : parsePodCidr(this.flags['pod-cidr']);
    const res = await startManagedRuntime(
      {
        endpoint: this.flags['container-runtime-endpoint'],
        rootDir: this.flags['root-dir'],
        network: networkFor(this.flags['root-dir'], cidr),
        ...(this.flags['cgroup-driver'] === 'systemd' ? { cgroupDriver: 'systemd' as const } : {}),
      },
      { timeoutMs: Math.min(this.runtimeTimeoutMs(), 60_000) },
    );
    const result = { endpoint: res.endpoint, pid: res.pid, started: res.started, dir: res.layout.dir, images: res.images };
    await this.printObject(result, () =>
      res.started
        ? `started containerd (pid ${res.pid}) on ${res.endpoint}; data in ${res.layout.dir}`
        : `containerd (pid ${res.pid}) already running on ${res.endpoint}`,
    );
  }
}
