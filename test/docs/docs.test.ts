/**
 * The docs run: every ```sh block of README.md and docs/*.md is an example a
 * reader will paste, so each one runs here, in page order, against a private
 * containerd with the locally built images, and must exit 0. A ```text block
 * right after a runnable one shows its output; its shape (table headers, each
 * line's first word) must be in what the example printed. A block that
 * cannot run here says why in its info string: ```sh no-run: REASON.
 *
 * The examples are written for a node set up with ./scripts/demo.sh (the
 * default root dir and runtime socket, run from the checkout). Here they run
 * from the checkout too, with `klet` on PATH (this build), KLET_ROOT_DIR and
 * CONTAINER_RUNTIME_ENDPOINT set to the private runtime, and the default root
 * dir, socket and /tmp/ written in an example replaced by private ones
 * (docs/README.md "Examples that run" says so to readers).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, cleanEnv, KLET_BIN, PROJECT_ROOT } from '../helpers/cli.js';
import { docFiles } from '../helpers/docs.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The info string after the language word ("no-run: reason", or ''). */
  rest: string;
  code: string;
}

interface Example {
  file: string;
  line: number;
  code: string;
  /** The ```text block shown right after it, if any. */
  output?: string;
}

const SHELL_LANGS = new Set(['bash', 'shell', 'console', 'zsh', 'shell-session', 'shellsession']);
const DEFAULT_ROOT_DIR = '/var/lib/klet';
const DEFAULT_ENDPOINT = 'unix:///run/containerd/containerd.sock';
/** One pass, so a replacement is never replaced again (the private root dir is under /tmp/ too). */
const DEFAULTS = /unix:\/\/\/run\/containerd\/containerd\.sock|\/var\/lib\/klet(?![\w.-])|\/tmp\//g;
const BLOCK_TIMEOUT_MS = 150_000;

/** The fenced blocks of a markdown file, with whether only blank lines separate each from the one before. */
function fencedBlocks(file: string, text: string): Array<Block & { adjacent: boolean }> {
  const lines = text.split('\n');
  const out: Array<Block & { adjacent: boolean }> = [];
  let lastClose = -2;
  for (let i = 0; i < lines.length; i++) {
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^`]*)$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const fence = open[2] as string;
    const info = (open[3] as string).trim();
    const body: string[] = [];
    let j = i + 1;
    const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    while (j < lines.length && !close.test(lines[j] as string)) {
      body.push((lines[j] as string).slice(Math.min(indent, /^ */.exec(lines[j] as string)![0].length)));
      j++;
    }
    const between = lines.slice(lastClose + 1, i);
    const space = info.search(/\s/);
    out.push({
      file,
      line: i + 1,
      lang: space === -1 ? info : info.slice(0, space),
      rest: space === -1 ? '' : info.slice(space).trim(),
      code: body.join('\n'),
      adjacent: lastClose >= 0 && between.every((l) => l.trim() === ''),
    });
    lastClose = j;
    i = j;
  }
  return out;
}

const files = docFiles();
const blocks = files.flatMap((f) => fencedBlocks(f, fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8')));

/** Runnable examples per file, each with the output block that follows it. */
const examples = new Map<string, Example[]>();
for (const [i, b] of blocks.entries()) {
  if (b.lang !== 'sh' || b.rest !== '') continue;
  const next = blocks[i + 1];
  const output = next && next.file === b.file && next.adjacent && next.lang === 'text' ? next.code : undefined;
  const list = examples.get(b.file) ?? [];
  list.push({ file: b.file, line: b.line, code: b.code, output });
  examples.set(b.file, list);
}

describe('the docs mark their examples', () => {
  it('every shell example is a ```sh block, runnable or marked "no-run: REASON"', () => {
    const bad = blocks
      .filter((b) => SHELL_LANGS.has(b.lang) || (b.lang === 'sh' && b.rest !== '' && !/^no-run:\s*\S/.test(b.rest)))
      .map((b) => `${b.file}:${b.line}: \`\`\`${b.lang} ${b.rest}`);
    // A backtick in a backtick fence's info string makes the line no fence at all (CommonMark): the block would vanish.
    const broken = files.flatMap((f) =>
      fs
        .readFileSync(path.join(PROJECT_ROOT, f), 'utf8')
        .split('\n')
        .flatMap((l, i) => (/^ {0,3}```+[^`\s][^`]*`/.test(l) ? [`${f}:${i + 1}: ${l.trim()}`] : [])),
    );
    expect(bad).toEqual([]);
    expect(broken).toEqual([]);
  });

  it('most examples run (two runnable for each one marked no-run), and every docs page has one', () => {
    const sh = blocks.filter((b) => b.lang === 'sh');
    const runnable = sh.filter((b) => b.rest === '');
    expect(runnable.length).toBeGreaterThan(2 * (sh.length - runnable.length));
    const pages = files.filter((f) => f.startsWith('docs/'));
    const withoutRunnable = pages.filter((f) => !examples.has(f));
    expect(withoutRunnable).toEqual([]);
  });

  it('a command expected to fail (`! cmd`) is the last of its block, where its status is the block\'s', () => {
    const bad: string[] = [];
    for (const list of examples.values()) {
      for (const ex of list) {
        const cmds = ex.code.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
        cmds.forEach((l, k) => {
          if (l.startsWith('! ') && k !== cmds.length - 1) bad.push(`${ex.file}:${ex.line}: ${l}`);
        });
      }
    }
    expect(bad).toEqual([]);
  });
});

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs one example with bash -euo pipefail in its own process group, which is killed after it. */
function runBlock(code: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', code], { cwd: PROJECT_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const killGroup = (): void => {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // the group is gone
      }
    };
    const timer = setTimeout(killGroup, BLOCK_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (exit, signal) => {
      clearTimeout(timer);
      // Whatever the example left in the background (a `klet sync &` it did not stop) goes with it.
      killGroup();
      resolve({ code: exit, signal, stdout, stderr });
    });
  });
}

const words = (line: string): string[] => line.trim().split(/\s+/).filter((w) => w !== '');
const isHeader = (line: string): boolean => words(line).length >= 2 && words(line).every((w) => /^[A-Z][A-Z0-9_-]*$/.test(w));

/** What of a shown output an actual output must have: its header lines, and each other line's first word. */
function shapeMismatches(shown: string, actual: string): string[] {
  const actualLines = actual.split('\n').filter((l) => l.trim() !== '');
  const headers = new Set(actualLines.filter(isHeader).map((l) => words(l).join(' ')));
  const firstWords = new Set(actualLines.map((l) => words(l)[0]));
  const missing: string[] = [];
  for (const line of shown.split('\n').filter((l) => l.trim() !== '')) {
    if (isHeader(line)) {
      if (!headers.has(words(line).join(' '))) missing.push(`header "${words(line).join(' ')}"`);
    } else if (!firstWords.has(words(line)[0])) {
      missing.push(`a line starting "${words(line)[0]}" (shown: "${line.trim()}")`);
    }
  }
  return missing;
}

describe('the docs examples run', () => {
  let rt: TestRuntime;
  let scratch = '';
  let env: NodeJS.ProcessEnv = {};

  /** The example as it runs here: the defaults it names point at the private runtime and scratch dir. */
  const localize = (code: string): string =>
    code.replace(DEFAULTS, (m) => (m === DEFAULT_ENDPOINT ? rt.endpoint : m === DEFAULT_ROOT_DIR ? rt.rootDir : `${scratch}/tmp/`));

  beforeAll(async () => {
    assertBuilt();
    rt = await startTestRuntime();
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-docs-'));
    fs.mkdirSync(path.join(scratch, 'bin'));
    fs.mkdirSync(path.join(scratch, 'tmp'));
    // A klet sync, runonce or run-pod of an example keeps its pods in the runtime's cgroups unless the example names a cgroup
    // flag itself: a test never makes cgroups in the host's /kubepods, which a real kubelet may share.
    fs.writeFileSync(
      path.join(scratch, 'bin', 'klet'),
      [
        '#!/bin/sh',
        'if [ "$1" = sync ] || [ "$1" = runonce ] || [ "$1" = run-pod ]; then',
        '  case " $* " in *" --cgroup"*) ;; *) set -- "$@" --cgroups-per-qos=false --enforce-node-allocatable=none ;; esac',
        'fi',
        `exec '${process.execPath}' '${KLET_BIN}' "$@"`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    env = {
      ...cleanEnv(),
      PATH: `${path.join(scratch, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      KLET_ROOT_DIR: rt.rootDir,
      CONTAINER_RUNTIME_ENDPOINT: rt.endpoint,
      TMPDIR: path.join(scratch, 'tmp'),
    };
  });

  afterAll(async () => {
    if (env.PATH !== undefined) await runBlock('klet delete --all --force >/dev/null', env);
    await rt?.stop();
    if (scratch !== '') fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('the runner fails an example that fails, and a `! cmd` that succeeds', async () => {
    expect((await runBlock('true\nfalse\ntrue', env)).code).not.toBe(0);
    expect((await runBlock('klet --version | grep -q nosuchversion', env)).code).not.toBe(0);
    expect((await runBlock('true\n! klet --version', env)).code).not.toBe(0);
    expect((await runBlock('! klet stauts', env)).code).toBe(0);
  });

  for (const file of files) {
    const list = examples.get(file) ?? [];
    if (list.length === 0) continue;
    describe(file, () => {
      for (const ex of list) {
        it(`${file}:${ex.line}`, { timeout: BLOCK_TIMEOUT_MS + 30_000 }, async () => {
          const r = await runBlock(localize(ex.code), env);
          const report = `${ex.file}:${ex.line}\n${ex.code}\n--- exit ${r.code ?? r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
          expect(r.code, report).toBe(0);
          if (ex.output !== undefined) expect(shapeMismatches(ex.output, r.stdout), report).toEqual([]);
        });
      }
      // Each page starts from an empty node, whatever its examples left.
      afterAll(async () => {
        await runBlock('klet delete --all --force >/dev/null', env);
      });
    });
  }
});
