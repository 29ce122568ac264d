import { BaseCommand, outputFlags } from '../../base-command.js';

export default class RuntimeStart extends BaseCommand<typeof RuntimeStart> {
  static override summary = 'Start the klet-managed containerd on the runtime endpoint.';
  static override description = `Starts containerd (from PATH) detached, with its own root, state and socket under <root-dir>/containerd, a CNI bridge network (bridge + host-local + portmap from containernetworking-plugins), restrict_oom_score_adj = true, and a sandbox image klet builds locally. The sandbox image and a busybox image are built and imported, so pods run without any registry. Reuses a managed runtime that is already running.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --container-runtime-endpoint unix:///run/klet/containerd.sock --root-dir /tmp/klet',
  ];
  static override flags = { ...outputFlags };

  async run(): Promise<void> {
    const { startManagedRuntime } = await import('../../lib/runtime/containerd.js');
    const res = await startManagedRuntime(
      { endpoint: this.flags['container-runtime-endpoint'], rootDir: this.flags['root-dir'] },
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
