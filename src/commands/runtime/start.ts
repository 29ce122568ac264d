import { Flags } from '@oclif/core';
import { BaseCommand, outputFlags } from '../../base-command.js';

export default class RuntimeStart extends BaseCommand<typeof RuntimeStart> {
  static override summary = 'Start the klet-managed containerd on the runtime endpoint.';
  static override description = `Starts containerd (from PATH, or the one --containerd-bin / KLET_CONTAINERD names, with its own directory first on its PATH so the shim and runc beside it are used) detached, with its own root, state and socket under <root-dir>/containerd, a CNI bridge network (bridge + host-local + portmap from containernetworking-plugins), restrict_oom_score_adj = true, and a sandbox image klet builds locally, in a config of the version that containerd reads (from \`containerd --version\`: version 2 for containerd 1.6 and 1.7, version 3 for 2.x; one older than 1.6 is an error naming it). The sandbox image and a busybox image are built and imported, so pods run without any registry. Reuses this root dir's managed runtime when it is already running on the same endpoint (running on another, it is an error naming the endpoint it serves; so is one running another containerd than --containerd-bin names). Starts on one endpoint are serialised by a lock, so two never both start a containerd; an endpoint already served by another root dir's klet-managed containerd is an error naming that root dir and a private socket to use instead.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --container-runtime-endpoint unix:///run/klet/containerd.sock --root-dir /tmp/klet',
    '<%= config.bin %> <%= command.id %> --cgroup-driver systemd',
    '<%= config.bin %> <%= command.id %> --containerd-bin /var/cache/klet-containerd/v2.4.2/containerd',
  ];
  static override flags = {
    ...outputFlags,
    'cgroup-driver': Flags.string({
      summary: "How runc makes the containers' cgroups: cgroupfs, or systemd (SystemdCgroup = true: systemd scopes). Must be the driver klet runs pods with (--cgroup-driver of runonce and sync). Default: cgroupfs.",
      options: ['cgroupfs', 'systemd'],
    }),
    'containerd-bin': Flags.string({
      summary:
        'The containerd executable to start (e.g. a containerd 2.x built by scripts/build-containerd.sh); its directory comes first on its PATH, so containerd-shim-runc-v2, runc and ctr beside it are used. Default: containerd on PATH.',
      env: 'KLET_CONTAINERD',
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
      {
        timeoutMs: Math.min(this.runtimeTimeoutMs(), 60_000),
        ...(this.flags['containerd-bin'] === undefined ? {} : { containerdBin: this.flags['containerd-bin'] }),
      },
    );
    const result = {
      endpoint: res.endpoint,
      pid: res.pid,
      started: res.started,
      dir: res.layout.dir,
      images: res.images,
      containerd: res.containerd?.bin ?? null,
      version: res.containerd?.version.text ?? null,
    };
    await this.printObject(result, () =>
      res.started
        ? `started containerd (pid ${res.pid}) on ${res.endpoint}; data in ${res.layout.dir}`
        : `containerd (pid ${res.pid}) already running on ${res.endpoint}`,
    );
  }
}
