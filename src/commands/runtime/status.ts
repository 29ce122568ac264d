import { BaseCommand, outputFlags } from '../../base-command.js';

export default class RuntimeStatus extends BaseCommand<typeof RuntimeStatus> {
  static override summary = 'Show the container runtime: endpoint, name, version, conditions, whether klet manages it.';
  static override description = `Exits 0 when the runtime answers on the endpoint, 1 otherwise (the report is still printed). MANAGED is yes only when this root dir's klet-managed containerd serves this endpoint; when it runs on another, MANAGED says where (rootDirRuntimeEndpoint with -o json).`;
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> -o json'];
  static override flags = { ...outputFlags };

  async run(): Promise<void> {
    const { runtimeStatus } = await import('../../lib/runtime/containerd.js');
    const r = await runtimeStatus(
      { endpoint: this.flags['container-runtime-endpoint'], rootDir: this.flags['root-dir'] },
      { timeoutMs: Math.min(this.runtimeTimeoutMs(), 10_000) },
    );
    await this.printObject(r, () => {
      const rows: [string, string][] = [
        ['ENDPOINT', r.endpoint],
        ['RUNTIME', r.reachable ? `${r.runtimeName} ${r.runtimeVersion} (CRI ${r.runtimeApiVersion})` : '-'],
        ['MANAGED', r.managed ? `yes (pid ${r.pid}, ${r.managedDir})` : r.rootDirRuntimeEndpoint !== null ? `no (this root dir's runtime runs on ${r.rootDirRuntimeEndpoint})` : 'no'],
        ...r.conditions.map((c): [string, string] => [c.type, c.status ? 'true' : `false: ${c.reason} ${c.message}`.trim()]),
      ];
      if (r.error !== null) rows.push(['ERROR', r.error]);
      const w = Math.max(...rows.map(([k]) => k.length));
      return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
    });
    if (!r.reachable) {
      // Report printed; exit non-zero without a second error line.
      this.exit(1);
    }
  }
}
