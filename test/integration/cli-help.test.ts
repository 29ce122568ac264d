/**
 * What `--help` promises, checked against the built CLI: topics list their
 * subcommands, every file an example names exists, every flag an example
 * (in --help or the README) passes is declared by its command, and a command that is not
 * implemented yet says so and exits 3 when run exactly as its own --help
 * examples (and the README) show, flags included.
 *
 * Nothing here reaches a runtime: commands get a temp root dir and an
 * endpoint under it where nothing listens.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, explain, nonEmptyLines, runKlet } from '../helpers/cli.js';
import { docsText } from '../helpers/docs.js';

interface ManifestCommand {
  id: string;
  description?: string;
  examples?: string[];
}

const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'oclif.manifest.json'), 'utf8')) as {
  commands: Record<string, ManifestCommand>;
};
const commands = Object.values(manifest.commands);

/** An example's words: `<%= config.bin %> <%= command.id %> a b` -> ['klet', 'runtime', 'start', 'a', 'b']. */
function exampleWords(cmd: ManifestCommand, example: string): string[] {
  const line = example.replaceAll('<%= config.bin %>', 'klet').replaceAll('<%= command.id %>', cmd.id.replaceAll(':', ' '));
  return line.trim().split(/\s+/);
}

/** A `klet ...` example as klet's argv. */
function exampleArgv(cmd: ManifestCommand, example: string): string[] {
  const words = exampleWords(cmd, example);
  expect(words[0], example).toBe('klet');
  return words.slice(1);
}

let tmp = '';
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cli-help-'));
});
afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('topics', () => {
  it.each([
    ['runtime', ['runtime start', 'runtime status', 'runtime stop']],
    ['images', ['images import', 'images ls']],
  ])('klet %s --help lists its subcommands, as plain `klet TOPIC` does', async (topic, subcommands) => {
    const help = await runKlet([topic, '--help']);
    expect(help.code, explain(help)).toBe(0);
    const plain = await runKlet([topic]);
    expect(help.stdout).toMatch(/^COMMANDS$/m);
    for (const sub of subcommands) expect(help.stdout, explain(help)).toMatch(new RegExp(`^  ${sub} +\\S`, 'm'));
    expect(help.stdout).toBe(plain.stdout);
  });
});

describe('examples', () => {
  /** Words of a shell command line, quotes honoured; stops at a comment, pipe or redirection. */
  function shellWords(line: string): string[] {
    const words: string[] = [];
    let cur: string | null = null;
    let quote: string | null = null;
    for (const ch of line) {
      if (quote !== null) {
        if (ch === quote) quote = null;
        else cur = (cur ?? '') + ch;
      } else if (ch === "'" || ch === '"') {
        quote = ch;
        cur = cur ?? '';
      } else if (/\s/.test(ch)) {
        if (cur !== null) words.push(cur);
        cur = null;
      } else {
        cur = (cur ?? '') + ch;
      }
    }
    if (cur !== null) words.push(cur);
    const end = words.findIndex((w) => /^(#|\||\|\||&&|;|>|2>|<)/.test(w));
    return end === -1 ? words : words.slice(0, end);
  }

  /** The flags in `argv` (after the command id) that `cmd` does not declare. */
  function unknownFlags(cmd: ManifestCommand & { flags?: Record<string, { char?: string }> }, argv: string[]): string[] {
    const flags = Object.entries(cmd.flags ?? {});
    const known = new Set(['--help', '-h', ...flags.map(([n]) => `--${n}`), ...flags.flatMap(([, f]) => (f.char ? [`-${f.char}`] : []))]);
    // Only flags before a `--`; short boolean flags may be grouped (`-it` is -i -t, as oclif takes it).
    const end = argv.indexOf('--');
    return (end === -1 ? argv : argv.slice(0, end))
      .filter((w) => /^--?[a-zA-Z]/.test(w))
      .map((w) => w.split('=')[0]!)
      .flatMap((w) => (/^-[a-zA-Z]{2,}$/.test(w) ? [...w.slice(1)].map((c) => `-${c}`) : [w]))
      .filter((w) => !known.has(w));
  }

  /** The command a `klet ...` line runs (the longest id its words start with), and the words after it. */
  function commandOf(words: string[]): [ManifestCommand, string[]] | undefined {
    for (let n = Math.min(words.length, 3); n > 0; n--) {
      const cmd = manifest.commands[words.slice(0, n).join(':')];
      if (cmd) return [cmd, words.slice(n)];
    }
    return undefined;
  }

  it('every flag a --help example or a README or docs/ `klet ...` line passes is one that command declares (no "Nonexistent flag")', () => {
    const bad: string[] = [];
    for (const cmd of commands) {
      for (const ex of cmd.examples ?? []) {
        const words = shellWords(exampleWords(cmd, ex).join(' '));
        if (words[0] !== 'klet') continue;
        for (const f of unknownFlags(cmd, words.slice(1 + cmd.id.split(':').length))) bad.push(`klet ${cmd.id} --help example "${ex}": ${f}`);
      }
    }
    const readme = docsText();
    const lines = [...readme.matchAll(/`klet ([^`\n]+)`/g), ...readme.matchAll(/^(?:\$ )?klet ([^\n]+)$/gm)].map((m) => m[1]!);
    let checked = 0;
    for (const line of lines) {
      const found = commandOf(shellWords(line));
      if (!found) continue;
      checked++;
      for (const f of unknownFlags(found[0], found[1])) bad.push(`README/docs "klet ${line}": ${f}`);
    }
    expect(checked).toBeGreaterThan(20);
    expect(bad).toEqual([]);
  });

  it('every file under examples/ that a --help example names exists', () => {
    const named: string[] = [];
    for (const cmd of commands) {
      for (const ex of cmd.examples ?? []) {
        for (const word of exampleWords(cmd, ex)) if (word.startsWith('examples/')) named.push(word);
      }
    }
    expect(named.length).toBeGreaterThan(0);
    const missing = named.filter((f) => !fs.existsSync(path.join(PROJECT_ROOT, f)));
    expect(missing).toEqual([]);
  });
});

describe('commands not implemented yet', () => {
  const readme = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
  /** The README's command table rows that say "not implemented yet": [command, example]. */
  const rows = [...readme.matchAll(/^\| `([a-z- ]+)` \|[^|\n]*not implemented yet[^|\n]*\| `klet ([^`]*)` \|$/gm)].map(
    (m) => [m[1] as string, m[2] as string] as const,
  );
  const endpointArgs = (): string[] => ['--root-dir', tmp, '--container-runtime-endpoint', `unix://${tmp}/none.sock`];

  it('the README marks them', () => {
    expect(rows.map(([name]) => name).sort()).toEqual(
      commands
        .filter((c) => /not implemented yet/i.test(c.description ?? ''))
        .map((c) => c.id.replaceAll(':', ' '))
        .sort(),
    );
  });

  // Every command is built today; the check below applies again to the next one added as a stub.
  if (rows.length > 0) it.each(rows)('klet %s: its --help says so; its --help and README examples exit 3, flags included', async (name, readmeExample) => {
    const cmd = manifest.commands[name.replaceAll(' ', ':')];
    expect(cmd, name).toBeDefined();
    const help = await runKlet([...name.split(' '), '--help']);
    expect(help.stdout, explain(help)).toContain('Not implemented yet: exits 3.');
    const runs = [...(cmd?.examples ?? []).map((ex) => exampleArgv(cmd as ManifestCommand, ex)), readmeExample.trim().split(/\s+/)];
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const argv of runs) {
      const r = await runKlet([...argv, ...endpointArgs()]);
      expect(r.code, `klet ${argv.join(' ')}: ${explain(r)}`).toBe(3);
      expect(nonEmptyLines(r.stderr), explain(r)).toEqual([`error: klet ${name}: not implemented yet`]);
    }
  });
});
