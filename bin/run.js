#!/usr/bin/env node
// klet entry: uses the generated oclif manifest; no command module loads for
// --help. Start-up cost is measured by bench/coldstart.js (see bench/README.md).
import fs from 'node:fs';
import module from 'node:module';
import os from 'node:os';

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  process.stderr.write(`error: klet needs Node.js 22 or newer; ${process.execPath} is ${process.version}\n`);
  process.exit(1);
}

// A stdout closed by its reader (`klet logs POD | head -1`) ends klet at once
// and quietly, for every command and entry below, as it ends kubectl and
// crictl (Go programs) and coreutils: killed by SIGPIPE, status 141 in the
// shell. Without this, oclif swallows the EPIPE and its final flush waits
// for a 'drain' that never comes, and Node exits 13 ("unsettled top-level
// await"). Node ignores SIGPIPE; a listener added and removed gives it its
// default action back (libuv resets it to SIG_DFL). exit(141) in case not.
process.stdout.on('error', (err) => {
  if (err.code !== 'EPIPE') throw err;
  process.on('SIGPIPE', () => {});
  process.removeAllListeners('SIGPIPE');
  process.kill(process.pid, 'SIGPIPE');
  process.exit(141);
});

const argv = process.argv.slice(2);

// KLET_ENTRY=oclif sends `klet runonce` and `klet sync` through oclif (below); any other value is a mistake.
if (process.env.KLET_ENTRY !== undefined && process.env.KLET_ENTRY !== 'oclif') {
  process.stderr.write(`error: KLET_ENTRY "${process.env.KLET_ENTRY}": not a known entry (set it to oclif, or unset it)\n`);
  process.exit(2);
}

// `klet --version` / `-v` without loading oclif (~100 ms of module loading):
// the same line oclif prints (config.userAgent: NAME/VERSION PLATFORM-ARCH
// node-VERSION). WSL is left to oclif, which reports its platform as "wsl".
if ((argv[0] === '--version' || argv[0] === '-v') && !(process.platform === 'linux' && /microsoft/i.test(os.release()))) {
  const pjson = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const arch = process.arch === 'ia32' ? 'x86' : process.arch;
  process.stdout.write(`${pjson.name}/${pjson.version} ${process.platform}-${arch} node-${process.version}\n`);
  process.exit(0);
}

// `klet [COMMAND...] --help` from the help oclif rendered at build time
// (scripts/manifest.js), without loading oclif: same text, a fraction of the
// start-up. Anything else with --help (flags mixed in, unknown words) goes to oclif.
const helpAt = argv.findIndex((a) => a === '--help' || a === '-h');
if (helpAt === argv.length - 1 && argv.slice(0, -1).every((a) => /^[a-z][a-z-]*$/.test(a))) {
  try {
    const rendered = JSON.parse(fs.readFileSync(new URL('../dist/help.json', import.meta.url), 'utf8'));
    const text = rendered[argv.slice(0, -1).join(':')];
    if (typeof text === 'string') {
      process.stdout.write(text);
      process.exit(0);
    }
  } catch {
    // No pre-rendered help (not built with scripts/manifest.js): oclif renders it.
  }
}

// Cache V8's compiled code of klet and oclif on disk (os.tmpdir()/node-compile-cache;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off): later starts skip most compiling.
module.enableCompileCache?.();
// The Node version is checked above; oclif's own check loads semver (47 modules).
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1';
// klet always runs its compiled dist/. Without this, NODE_ENV=development or
// test makes oclif register tsx and look for TypeScript sources of the
// commands, then warn on stderr that it found none.
globalThis.oclif = { ...globalThis.oclif, enableAutoTranspile: false };

/**
 * Global flags (BaseCommand.baseFlags, all of which take a value) given before
 * the command, as in `klet --root-dir /tmp/k images ls`: oclif takes the first
 * word as the command id, so they are moved behind the command's own words
 * (before a `--`, if any). Keep in sync with src/base-command.ts.
 */
const GLOBAL_FLAGS = new Set(['--root-dir', '--container-runtime-endpoint', '--runtime-request-timeout', '--node-name', '--log-level']);

/** dist/bundle/'s runonce entry when it is not older than dist/cli/'s, else dist/cli/'s. */
function runOnceEntryUrl() {
  const modules = new URL('../dist/cli/runonce-entry.js', import.meta.url);
  const bundle = new URL('../dist/bundle/runonce-entry.mjs', import.meta.url);
  const seconds = (u) => Math.floor((fs.statSync(u, { throwIfNoEntry: false })?.mtimeMs ?? Number.NaN) / 1000);
  return seconds(bundle) >= seconds(modules) ? bundle.href : modules.href;
}

/** The value of the last --log-level among ARGS (the one that counts), if any. */
function lastLogLevel(args) {
  let level;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--') break;
    if (args[i] === '--log-level') level = args[++i];
    else if (args[i].startsWith('--log-level=')) level = args[i].slice('--log-level='.length);
  }
  return level;
}

function moveLeadingGlobalFlags(args) {
  const lead = [];
  let i = 0;
  while (i < args.length) {
    const a = args[i];
    const eq = a.indexOf('=');
    if (eq > 0 && GLOBAL_FLAGS.has(a.slice(0, eq))) {
      lead.push(a);
      i += 1;
    } else if (GLOBAL_FLAGS.has(a) && i + 1 < args.length) {
      lead.push(a, args[i + 1]);
      i += 2;
    } else {
      break;
    }
  }
  if (lead.length === 0 || i === args.length) return args;
  const rest = args.slice(i);
  const dashdash = rest.indexOf('--');
  return dashdash === -1 ? [...rest, ...lead] : [...rest.slice(0, dashdash), ...lead, ...rest.slice(dashdash)];
}

// `klet sync` is long-running: glibc gives every thread that allocates its own
// malloc arena (libuv's fs workers, V8's GC helpers), which holds tens of MB
// of resident memory an agent does not need, and V8 sizes its young
// generation for throughput (16 MB semi-spaces), not for a small resident
// set. Re-exec once, in place (same pid: process.execve, no extra
// process), with two arenas and V8's --optimize-for-size: its heap grows
// less eagerly and gives pages back (holding 110 pods, the V8 heap's
// committed size went from 61 MB to 29 MB for 24 MB used), and it implies
// 1 MB semi-spaces (node --optimize-for-size --print-flag-values; an
// explicit --max-semi-space-size does not change that). It costs CPU: on
// 2026-11-27, holding 110 pods, 2.1-2.9 % of a core against 1.3-1.6 %
// without it (2-8 MB semi-spaces), but 110-123 MB RSS against 94-98 MB,
// over the kubelet's ~107 MB (bench/results/HISTORY.md, steady-110, seventeenth
// session). What klet sync allocates is kept small instead (CRI strings
// reused, unchanged PLEG records and manifest snapshots kept).
// Not --single-threaded-gc, although it took ~14 % off the CPU of a sync
// holding 110 pods (eighteenth session): with it, process.exit() shortly
// after start (a bad flag value reported through oclif, the 5 s exit grace)
// deadlocked now and then in Node 24 -- the main thread joining V8's worker
// threads (NodePlatform::Shutdown) while a worker's concurrent baseline
// compile waited for the main thread to collect garbage
// (CollectionBarrier::AwaitCollectionBackground). 3 hangs in 180 runs of a
// sync ending on a missing kubeconfig, 0 in 480 without it (nineteenth
// session; one CI run hit it).
//
// `klet dashboard` on a terminal runs as long, and its RSS must stay flat:
// the screen's garbage (ink rebuilds every frame) made V8 grow the young
// generation from 1 MB to 2x32 MB and shrink it back when things calmed
// down, most of the dashboard's RSS saw-tooth (130 -> 250 MB in 3 minutes).
// Semi-spaces fixed at 8 MB: RSS 130-160 MB with no trend, CPU unchanged
// (3.2 % of a core either way; bench/dashboard.js, see bench/README.md).
// --optimize-for-size flattened it further but cost 70 % more CPU.
const command = moveLeadingGlobalFlags(argv)[0];
const longRunning = command === 'sync' || (command === 'dashboard' && process.stdout.isTTY === true);
if (longRunning && process.env.MALLOC_ARENA_MAX === undefined && typeof process.execve === 'function') {
  const semiSpace = process.execArgv.some((a) => a.startsWith('--max-semi-space-size') || a.startsWith('--min-semi-space-size'));
  // Young-generation flags given to node (node --max-semi-space-size=N bin/run.js sync) are taken as they
  // are: --optimize-for-size would pin the semi-spaces to 1 MB whatever they say.
  const v8Flags =
    command === 'sync'
      ? semiSpace
        ? []
        : ['--optimize-for-size'].filter((f) => !process.execArgv.includes(f))
      : semiSpace
        ? []
        : ['--min-semi-space-size=8', '--max-semi-space-size=8'];
  process.execve(process.execPath, [process.execPath, ...v8Flags, ...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    MALLOC_ARENA_MAX: '2',
  });
}

// `klet runonce` with well-formed flags runs without oclif (src/cli/runonce-entry.ts):
// a one-shot command on a node being provisioned, where oclif's Config and
// command loader were ~5 % of a 30-pod run. Anything that entry does not
// take (--help, bad input) goes to oclif, whose messages users see.
// KLET_ENTRY=oclif sends every command to oclif (tests compare the two; bench A/B).
// It loads from dist/bundle/ (scripts/bundle.js, the last step of `npm run
// build`: its ~150 modules in one file, ~40 ms less start-up, run through a
// code cache its first run writes, src/cli/cached-script.ts: ~20-40 ms less
// again) when that is at least as new as dist/cli/ (whole seconds: copies
// and tarballs keep no finer times); after a bare `tsc`, from the modules
// just compiled.
const args = moveLeadingGlobalFlags(argv);
let done = false;
if (args[0] === 'runonce' && process.env.KLET_ENTRY !== 'oclif') {
  const entry = runOnceEntryUrl();
  // --log-level debug prints stacks: through the bundle's source maps they
  // name klet's TypeScript sources rather than the bundle's chunks.
  if (entry.includes('/dist/bundle/') && lastLogLevel(args) === 'debug') process.setSourceMapsEnabled(true);
  const { runOnceEntry } = await import(entry);
  done = await runOnceEntry(args.slice(1), process.env);
}
// `klet sync` with well-formed flags runs without oclif too (src/cli/sync-entry.ts):
// it runs for days, and oclif's Config and modules would stay resident all along
// (5-6 MB of the RSS of a sync holding 110 pods, eighteenth session: bench/results/HISTORY.md).
if (args[0] === 'sync' && process.env.KLET_ENTRY !== 'oclif') {
  const { syncEntry } = await import('../dist/cli/sync-entry.js');
  done = await syncEntry(args.slice(1), process.env);
}
if (!done) {
  const { execute } = await import('@oclif/core/execute');
  await execute({ dir: import.meta.url, args });
}
