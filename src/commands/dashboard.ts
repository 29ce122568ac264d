import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { KletError } from '../lib/errors.js';

export default class Dashboard extends BaseCommand<typeof Dashboard> {
  static override summary = 'Watch a running klet sync live: pods, the sync loop, events, container logs.';
  static override description = `Attaches to the local API of a running \`klet sync\` (its unix socket <root-dir>/klet.sock, or with --server its loopback TCP listener and --token-file) and draws a live screen: the node (runtime version and conditions, pod sources with their last read and error, PLEG health and last relist), the pods (READY, STATUS with a countdown to the next restart of a crash-looping container, RESTARTS, AGE, IP, source), the sync loop (iterations per second by trigger, last durations, pod-worker queue) and the newest events. Enter shows a pod's containers, states, exit codes, probes, mounts and, with l, the tail of a container's log.

Keys: ↑/↓ select, Enter details, Esc back, l follow the log, Tab next container, s sort, / filter, ? keys, q or Ctrl-C quit. When the sync stops the screen says so and reconnects by itself. Below 60x16 a compact view shows pods and status only. NO_COLOR turns colour off. When stdout is not a terminal, one plain snapshot is printed and the command exits. \`klet sync --tui\` shows the same screen in the sync's own process.`;
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --root-dir /var/lib/klet-test',
    '<%= config.bin %> <%= command.id %> --server http://127.0.0.1:10250 --token-file /etc/klet/token',
    '<%= config.bin %> <%= command.id %> | cat',
  ];
  static override flags = {
    socket: Flags.string({ summary: 'Local API socket of the klet sync to watch. Default <root-dir>/klet.sock.', exclusive: ['server'] }),
    server: Flags.string({
      summary: "URL of a klet sync's --listen TCP listener (http://127.0.0.1:PORT: plain HTTP, so https:// is refused); needs --token-file.",
      dependsOn: ['token-file'],
    }),
    'token-file': Flags.string({ summary: 'File holding the bearer token of --server.', dependsOn: ['server'] }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Dashboard);
    const svc = await import('../lib/services/dashboard.js');
    const { remoteSource } = await import('../lib/dashboard/feed.js');
    const target = await svc.dashboardTarget({ socket: flags.socket, server: flags.server, tokenFile: flags['token-file'], rootDir: this.flags['root-dir'] });
    const interactive = process.stdout.isTTY === true && process.stdin.isTTY === true;
    // A closed terminal ends the screen as SIGINT and SIGTERM do (only here: under nohup a sync must not hear SIGHUP).
    const hangup = new AbortController();
    const onHangup = () => hangup.abort();
    process.once('SIGHUP', onHangup);
    try {
      const screen = async (args: import('../lib/services/dashboard.js').ScreenArgs) => {
        const [{ runScreen }, { colorWanted }] = await Promise.all([import('../ui/dashboard/screen.js'), import('../lib/dashboard/screen.js')]);
        await runScreen(args, { color: colorWanted(), frameStatsFile: process.env.KLET_DASHBOARD_FRAME_STATS || undefined });
      };
      const result = await svc.runDashboard(
        { source: remoteSource(target), interactive, columns: process.stdout.columns || 100 },
        { signal: AbortSignal.any([this.signal, hangup.signal]), write: (text) => process.stdout.write(text), screen: interactive ? screen : undefined },
      );
      process.exitCode = result.exitCode;
    } catch (err) {
      const { LocalApiUnavailableError } = await import('../lib/server/index.js');
      if (!(err instanceof LocalApiUnavailableError)) throw err;
      const how = flags.server !== undefined ? 'klet sync --listen ADDR --auth-token-file FILE' : `klet sync --root-dir ${this.flags['root-dir']}`;
      throw new KletError(`${err.message}; start it with: ${how}`, { cause: err });
    } finally {
      process.off('SIGHUP', onHangup);
    }
  }
}
