import { BaseCommand, outputFlags } from '../../base-command.js';

export default class RuntimeStop extends BaseCommand<typeof RuntimeStop> {
  static override summary = 'Stop the klet-managed containerd and every pod it runs.';
  static override description = `Stops and removes every pod sandbox through CRI (containers get SIGTERM, then SIGKILL), stops containerd, ends any shim left over, unmounts what remains under <root-dir>/containerd and deletes the CNI bridge the runtime made. Images and the containerd root are kept for the next start, and so are klet's pod records and the pods' logs under /var/log/pods (as they are when the kubelet's runtime stops): once a runtime runs again, klet logs reads them, and klet delete --all (or klet sync, for pods no manifest wants) removes them. Only the containerd in this root dir's own pidfile is stopped, on the socket it serves (recorded in its config when it started) even when --container-runtime-endpoint names another, and only files it created are removed: with no runtime of this root dir running, nothing is touched, whatever serves the endpoint (another root dir's runtime, the kubelet's).`;
  static override examples = ['<%= config.bin %> <%= command.id %>'];
  static override flags = { ...outputFlags };

  async run(): Promise<void> {
    const { stopManagedRuntime } = await import('../../lib/runtime/containerd.js');
    const res = await stopManagedRuntime({
      endpoint: this.flags['container-runtime-endpoint'],
      rootDir: this.flags['root-dir'],
    });
    await this.printObject(res, () =>
      res.wasRunning
        ? `stopped containerd on ${res.endpoint} (${res.podsStopped} pod sandbox(es) stopped and removed)`
        : `no klet-managed containerd was running for ${res.endpoint}`,
    );
  }
}
