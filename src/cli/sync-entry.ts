/**
 * `klet sync` without oclif. bin/run.js hands sync's arguments here first.
 * klet sync runs for days, and oclif stays loaded for as long: its Config
 * (every plugin and command of the manifest), its modules and the ICU
 * collation data its command sort pulls in held ~5 MB of the resident set of
 * a sync holding 110 pods (bench/README.md, steady-110).
 *
 * The parser (src/cli/argv.ts) takes only argument lists it reads exactly
 * as oclif does; anything else (--help, an unknown flag, a bad value) goes to
 * oclif, whose messages are the ones users see for bad input. The flags below
 * are the oclif command's (src/commands/sync.ts, src/node-flags.ts and the
 * base command's global flags): test/unit/cli-sync-entry.test.ts holds the
 * two to the same names, types, defaults, environment variables and parses.
 * After parsing, both paths run the same code (syncCommand, RuntimeSession,
 * reportFailure).
 */
import fs from 'node:fs';
import { setLogLevel } from '../lib/log.js';
import { type ArgvFlagSpec, CGROUP_FLAGS, GLOBAL_FLAGS, type GlobalArgv, givenGlobals, parseArgv } from './argv.js';
import { nodeNameOf } from './defaults.js';
import { normalizeKubeletBools } from './kubelet-bools.js';
import type { SyncFlags } from './sync.js';

/** Every flag `klet sync` takes, global ones included. */
export const SYNC_FLAGS: Readonly<Record<string, ArgvFlagSpec>> = {
  ...GLOBAL_FLAGS,
  config: { type: 'string' },
  'print-config': { type: 'boolean', default: false },
  'manifest-dir': { type: 'string', aliases: ['pod-manifest-path'] },
  'manifest-url': { type: 'string' },
  'manifest-url-header': { type: 'string', multiple: true },
  'file-check-frequency': { type: 'duration' },
  'http-check-frequency': { type: 'duration' },
  'pleg-relist-period': { type: 'duration' },
  'sync-frequency': { type: 'duration' },
  'max-parallel-syncs': { type: 'integer', min: 1 },
  'allowed-unsafe-sysctls': { type: 'string' },
  kubeconfig: { type: 'string' },
  'bootstrap-kubeconfig': { type: 'string' },
  'rotate-certificates': { type: 'option', options: ['true', 'false'] },
  'node-labels': { type: 'string' },
  'register-with-taints': { type: 'string' },
  'kube-reserved': { type: 'string' },
  'system-reserved': { type: 'string' },
  'max-pods': { type: 'integer', min: 1 },
  'node-ip': { type: 'string' },
  'cluster-dns': { type: 'string', multiple: true },
  'cluster-domain': { type: 'string' },
  'resolv-conf': { type: 'string' },
  listen: { type: 'string' },
  'auth-token-file': { type: 'string' },
  address: { type: 'string' },
  port: { type: 'integer', min: 0 },
  'tls-cert-file': { type: 'string' },
  'rotate-server-certificates': { type: 'option', options: ['true', 'false'] },
  'tls-private-key-file': { type: 'string' },
  'client-ca-file': { type: 'string' },
  'anonymous-auth': { type: 'option', options: ['true', 'false'] },
  'authentication-token-webhook': { type: 'option', options: ['true', 'false'] },
  'authorization-mode': { type: 'option', options: ['AlwaysAllow', 'Webhook'] },
  ...CGROUP_FLAGS,
  tui: { type: 'boolean', default: false },
  'image-gc-high-threshold': { type: 'integer', min: 0 },
  'image-gc-low-threshold': { type: 'integer', min: 0 },
  'minimum-image-gc-age': { type: 'duration', allowZero: true },
  'pod-max-pids': { type: 'integer', min: -2147483648 },
  'seccomp-default': { type: 'option', options: ['true', 'false'] },
  'healthz-port': { type: 'integer', min: -2147483648 },
  'healthz-bind-address': { type: 'string' },
  'container-log-max-size': { type: 'string' },
  'container-log-max-files': { type: 'integer', min: -2147483648 },
  'eviction-hard': { type: 'string' },
  'eviction-soft': { type: 'string' },
  'eviction-soft-grace-period': { type: 'string' },
  'eviction-minimum-reclaim': { type: 'string' },
  'eviction-pressure-transition-period': { type: 'duration' },
  'eviction-max-pod-grace-period': { type: 'integer', min: -2147483648 },
  'maximum-dead-containers-per-container': { type: 'integer', default: '1', min: -1 },
  'container-gc-period': { type: 'duration', default: '1m' },
  'image-gc-period': { type: 'duration', default: '5m' },
  'crash-loop-backoff-initial': { type: 'duration' },
  'crash-loop-backoff-max': { type: 'duration' },
  'crash-loop-backoff-reset': { type: 'duration' },
};

export interface SyncArgv extends SyncFlags, GlobalArgv {}

/**
 * The flags of `klet sync ARGV` (the words after `sync`) as oclif would
 * parse them, or undefined when this parser does not take the list (then
 * oclif must: it may be an error, or --help).
 */
export function parseSyncArgv(argv: readonly string[], env: NodeJS.ProcessEnv): SyncArgv | undefined {
  return parseArgv(SYNC_FLAGS, normalizeKubeletBools(argv), env) as unknown as SyncArgv | undefined;
}

/**
 * Run `klet sync ARGV` if parseSyncArgv takes it: true once the sync has
 * stopped (on a failure the process exits with its code, as oclif's exit
 * does); false, having done nothing, when oclif must run it.
 */
export async function syncEntry(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<boolean> {
  const flags = parseSyncArgv(argv, env);
  if (flags === undefined) return false;
  setLogLevel(flags['log-level']);
  const { Interrupt } = await import('./interrupt.js');
  const { entrySession } = await import('./runtime-session.js');
  const { syncCommand } = await import('./sync.js');
  const interrupt = new Interrupt();
  const notice = (line: string) => process.stderr.write(line + '\n');
  const nodeName = nodeNameOf(flags['node-name']);
  let session: ReturnType<typeof entrySession> | undefined;
  let exitCode = 0;
  try {
    await syncCommand(flags, {
      nodeName,
      kletVersion: kletVersion(),
      globals: givenGlobals(argv, env, flags),
      runtime: (endpoint, timeoutMs) => {
        const s = (session ??= entrySession({ ...flags, 'container-runtime-endpoint': endpoint, 'runtime-request-timeout': timeoutMs }, () => interrupt.signal));
        return { cri: () => s.cri(), deps: () => s.deps() };
      },
      interruptedBy: () => interrupt.by,
      notice,
    });
  } catch (err) {
    const { reportFailure } = await import('./failure.js');
    exitCode = reportFailure(err instanceof Error ? err : new Error(String(err)), {
      output: 'table',
      interruptedBy: interrupt.by,
      hasFlag: (name) => Object.hasOwn(SYNC_FLAGS, name),
    });
  } finally {
    session?.close();
    interrupt.dispose();
  }
  if (exitCode !== 0) process.exit(exitCode);
  return true;
}

/** klet's version, package.json's (what oclif's config.version reads). */
function kletVersion(): string {
  return (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}
