/**
 * The two parsers of an oclif-free entry (src/cli/*-entry.ts) side by side:
 * oclif's, from the command class's flags, and the entry's. The entries'
 * unit tests hold them to the same answers.
 */
import { Parser } from '@oclif/core';
import { afterEach, expect, it } from 'vitest';

interface CommandClass {
  baseFlags?: object;
  flags?: object;
  args?: object;
}

/** The environment variables the global flags read; each test sets its own, restored after it. */
const ENV_KEYS = ['KLET_ROOT_DIR', 'CONTAINER_RUNTIME_ENDPOINT'];

export function entryParity<T>(command: CommandClass, parseEntry: (argv: string[], env: NodeJS.ProcessEnv) => T | undefined) {
  const oclifFlags = { ...command.baseFlags, ...command.flags } as Record<string, Record<string, unknown>>;

  /** The flags oclif's parser gives for ARGV, or the error it throws. */
  async function oclifParse(argv: string[]): Promise<{ flags?: Record<string, unknown>; error?: string }> {
    try {
      const out = await Parser.parse(argv, { flags: oclifFlags as never, args: (command.args ?? {}) as never, strict: true });
      return { flags: out.flags as Record<string, unknown> };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }

  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  afterEach(() => {
    for (const k of ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  /** Both parsers on ARGV with ENV (oclif reads process.env itself). */
  async function both(argv: string[], env: Record<string, string> = {}) {
    for (const k of ENV_KEYS) delete process.env[k];
    Object.assign(process.env, env);
    return { entry: parseEntry(argv, process.env), oclif: await oclifParse(argv) };
  }

  return { oclifFlags, both };
}

type Both = (argv: string[], env?: Record<string, string>) => Promise<{ entry: unknown; oclif: { flags?: Record<string, unknown>; error?: string } }>;

/**
 * The tests every entry's parser must pass against oclif's: TAKEN lists are
 * parsed by both to the same values, LEFT ones the entry leaves to oclif
 * (which parses them), REFUSED ones oclif refuses and the entry leaves to it;
 * the global flags' environment variables are read as oclif reads them.
 */
export function parsersAgree(both: Both, lists: { taken: string[][]; left: string[][]; refused: string[][] }): void {
  it.each(lists.taken.map((a) => [a.join(' '), a]))('taken by both, same values: %s', async (_label, argv) => {
    const { entry, oclif } = await both(argv as string[]);
    expect(oclif.error).toBeUndefined();
    expect(entry).toBeDefined();
    expect(entry).toEqual(oclif.flags);
  });

  it.each(lists.left.map((a) => [a.join(' '), a]))('left to oclif: %s', async (_label, argv) => {
    const { entry } = await both(argv as string[]);
    expect(entry).toBeUndefined();
  });

  it.each(lists.refused.map((a) => [a.join(' '), a]))('refused by oclif, left to it by the entry: %s', async (_label, argv) => {
    const { entry, oclif } = await both(argv as string[]);
    // --help is not a flag of the parser: oclif's Config handles it before parsing.
    if (!['--help', '-h'].includes((argv as string[])[0]!)) expect(oclif.error).toBeDefined();
    expect(entry).toBeUndefined();
  });

  it('environment variables: set ones are taken when the flag is not given, as oclif takes them', async () => {
    for (const [argv, env] of [
      [['--manifest-dir', 'm'], { KLET_ROOT_DIR: '/srv/klet', CONTAINER_RUNTIME_ENDPOINT: 'unix:///run/x.sock' }],
      [['--manifest-dir', 'm', '--root-dir', '/flag/wins'], { KLET_ROOT_DIR: '/srv/klet' }],
      [['--manifest-dir', 'm'], { KLET_ROOT_DIR: '' }],
    ] as const) {
      const { entry, oclif } = await both([...argv], env);
      expect(oclif.error).toBeUndefined();
      expect(entry).toEqual(oclif.flags);
    }
    const { entry } = await both(['--manifest-dir', 'm'], { KLET_ROOT_DIR: '/srv/klet' });
    expect((entry as Record<string, unknown> | undefined)?.['root-dir']).toBe('/srv/klet');
  });
}

/**
 * The argument shapes every oclif-free entry must leave to oclif, whatever
 * its command: LEFT ones oclif parses (an empty `=` value before a boolean,
 * a value that looks like a flag, oclif's greedy multiple flag), REFUSED ones
 * it refuses (help, unknown flags, a missing or repeated value, strays, `--`,
 * `-`, `--BOOL=true`, `--no-BOOL`, a bad log level). BOOL is one of the
 * command's boolean flags.
 */
export function commonShapes(bool: string): { left: string[][]; refused: string[][] } {
  return {
    left: [
      ['--manifest-dir=', `--${bool}`],
      ['--manifest-dir', '-weird'],
      ['--manifest-url-header', 'A: b', 'C: d'],
    ],
    refused: [
      ['--help'],
      ['-h'],
      ['--manifest-dir', 'm', '--bogus'],
      ['--manifest-dir'],
      ['--manifest-dir', 'a', '--manifest-dir', 'b'],
      ['--manifest-dir', `--${bool}`],
      ['stray'],
      ['--', '--manifest-dir', 'm'],
      ['--log-level', 'trace'],
      [`--${bool}=true`],
      [`--no-${bool}`],
      ['-'],
    ],
  };
}
