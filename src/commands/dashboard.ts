import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { InputError, KletError } from '../lib/errors.js';

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
    server: Flags.string({ summary: "URL of a klet sync's --listen TCP listener (http://127.0.0.1:PORT: plain HTTP, so https:// is refused); needs --token-file." }),
    'token-file': Flags.string({ summary: 'File holding the bearer token of --server.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Dashboard);
    const { localApiSocketPath, LocalApiUnavailableError, readAuthTokenFile } = await import('../lib/server/index.js');
    const { remoteSource } = await import('../lib/dashboard/feed.js');
    const { runDashboard } = await import('../lib/services/dashboard.js');

    let target: string | { url: string; token: string };
    if (flags.server !== undefined) {
      let url: URL;
      try {
        url = new URL(flags.server);
      } catch {
        throw new InputError(`--server "${flags.server}": not a URL (e.g. http://127.0.0.1:10250)`);
      }
      // `klet sync --listen` serves plain HTTP (loopback only, every request
      // with the bearer token): there is no TLS to talk to, and an https://
      // URL would only end in an OpenSSL record error.
      if (url.protocol === 'https:') throw new InputError(`--server "${flags.server}": klet sync --listen serves plain HTTP on loopback; use http://${url.host}`);
      if (url.protocol !== 'http:') throw new InputError(`--server "${flags.server}": expected an http:// URL (e.g. http://127.0.0.1:10250)`);
      if (flags['token-file'] === undefined) throw new InputError('--server needs --token-file: the TCP listener of klet sync never serves without a token');
      target = { url: url.origin, token: await readAuthTokenFile(flags['token-file']) };
    } else {
      if (flags['token-file'] !== undefined) throw new InputError('--token-file goes with --server; the unix socket needs no token');
      target = flags.socket ?? localApiSocketPath(this.flags['root-dir']);
    }

    const interactive = process.stdout.isTTY === true && process.stdin.isTTY === true;
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGTERM', stop);
    process.once('SIGHUP', stop);
    try {
      const result = await runDashboard(
        { source: remoteSource(target), interactive, columns: process.stdout.columns || 100 },
        {
          signal: controller.signal,
          write: (text) => process.stdout.write(text),
          screen: interactive
            ? async (args) => {
                const { runScreen } = await import('../ui/dashboard/screen.js');
                const { colorWanted } = await import('../lib/dashboard/screen.js');
                // bench/dashboard.js: KLET_DASHBOARD_FRAME_STATS=FILE gets every frame's timing on exit.
                const statsFile = process.env.KLET_DASHBOARD_FRAME_STATS;
                const latency: number[] = [];
                const inkRender: number[] = [];
                const cpu: number[] = [];
                const onFrame = (f: { latencyMs: number; inkRenderMs: number; cpuMs: number }) => {
                  if (latency.length >= 1_000_000) return;
                  latency.push(f.latencyMs);
                  inkRender.push(f.inkRenderMs);
                  cpu.push(f.cpuMs);
                };
                try {
                  await runScreen(args, { color: colorWanted(), onFrame: statsFile ? onFrame : undefined });
                } finally {
                  if (statsFile) (await import('node:fs')).writeFileSync(statsFile, JSON.stringify({ latency, inkRender, cpu }));
                }
              }
            : undefined,
        },
      );
      process.exitCode = result.exitCode;
    } catch (err) {
      if (err instanceof LocalApiUnavailableError) {
        const hint = flags.server !== undefined ? 'start it with klet sync --listen ADDR --auth-token-file FILE' : `start it with: klet sync --root-dir ${this.flags['root-dir']}`;
        throw new KletError(`${err.message}; ${hint}`, { cause: err });
      }
      throw err;
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGHUP', stop);
    }
  }
}
