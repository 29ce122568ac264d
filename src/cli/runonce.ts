/**
 * What `klet runonce` does once its flags are parsed, shared by the oclif
 * command (src/commands/runonce.ts) and the oclif-free entry
 * (src/cli/runonce-entry.ts), so the two cannot drift: check the manifest
 * directory, show progress, call the runOnce service, print the report.
 */
import fs from 'node:fs';
import { InputError } from '../lib/errors.js';
import type { KletEventBody } from '../lib/events/types.js';
import type { ServiceDeps } from '../lib/services/deps.js';
import type { CgroupFlags } from './cgroups.js';
import { type OutputFormat, printObject, interactiveStderr } from './output.js';

/** The parsed flags of `klet runonce` (without the global ones). */
export interface RunOnceFlags extends CgroupFlags {
  'manifest-dir'?: string;
  'manifest-url'?: string;
  'manifest-url-header'?: string[];
  objects?: string;
  wait: 'running' | 'ready';
  /** Milliseconds; 0 for none. */
  settle: number;
  /** Milliseconds. */
  timeout: number;
  'exit-code-from'?: string;
  cleanup: boolean;
}

export interface RunOnceHost {
  output: OutputFormat;
  deps(onEvent: (e: KletEventBody) => void): Promise<ServiceDeps>;
}

/** Run `klet runonce`; the exit code of the report (errors are thrown). */
export async function runOnceCommand(flags: RunOnceFlags, host: RunOnceHost): Promise<number> {
  const dir = flags['manifest-dir'] ?? (flags['manifest-url'] ? undefined : '/etc/kubernetes/manifests');
  // A directory or one manifest file, as the kubelet's staticPodPath.
  if (dir !== undefined && !fs.existsSync(dir)) throw new InputError(`--manifest-dir ${dir}: no such file or directory`);
  if (dir !== undefined && !fs.statSync(dir).isDirectory() && !fs.statSync(dir).isFile()) throw new InputError(`--manifest-dir ${dir}: not a directory or a file`);
  const { parseHeaders } = await import('../lib/config/manifest-url.js');
  const manifestUrlHeaders = parseHeaders(flags['manifest-url-header']);

  // The pod and QoS cgroups, as klet sync makes them (the kubelet's --runonce had its container manager), before any pod.
  const { openCommandCgroups } = await import('./cgroups.js');
  const cgroups = await openCommandCgroups(flags, await host.deps(() => undefined));
  const { createProgress } = await import('../ui/progress.js');
  const progress = await createProgress({ tty: interactiveStderr(host.output), json: host.output !== 'table' });
  const deps = { ...(await host.deps((e) => progress.event(e))), ...(cgroups ? { cgroups } : {}) };
  const { runOnce, formatRunOnceReport } = await import('../lib/services/run-once.js');
  const { report, exitCode } = await runOnce(
    {
      manifestDir: dir,
      manifestUrl: flags['manifest-url'],
      manifestUrlHeaders,
      objectsDir: flags.objects,
      waitReady: flags.wait === 'ready',
      settleMs: flags.settle,
      timeoutMs: flags.timeout,
      exitCodeFrom: flags['exit-code-from'],
      cleanup: flags.cleanup,
    },
    deps,
  ).finally(() => progress.close());
  const { formatTable } = await import('../lib/util/table.js');
  await printObject(host.output, report, () => formatRunOnceReport(report, formatTable));
  return exitCode;
}
