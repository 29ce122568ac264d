/**
 * `klet runonce` has two parsers: oclif's (the command class, which also
 * renders --help and every usage error) and the oclif-free entry's
 * (src/cli/runonce-entry.ts, which bin/run.js tries first). These tests hold
 * them to the same flags and the same answers: whatever the entry takes, oclif
 * parses to the same values; whatever oclif refuses, the entry leaves to oclif.
 */
import { describe, expect, it } from 'vitest';
import RunOnce from '../../src/commands/runonce.js';
import { RUNONCE_FLAGS, parseRunOnceArgv } from '../../src/cli/runonce-entry.js';
import { commonShapes, entryParity, parsersAgree } from '../helpers/entry-parity.js';

const { oclifFlags, both } = entryParity(RunOnce, parseRunOnceArgv);

describe('the entry declares the oclif command’s flags', () => {
  it('the same names, global flags included', () => {
    expect(Object.keys(RUNONCE_FLAGS).sort()).toEqual(Object.keys(oclifFlags).sort());
  });

  it.each(Object.keys(RUNONCE_FLAGS))('--%s: same type, char, env, options and multiple', (name) => {
    const spec = RUNONCE_FLAGS[name]!;
    const flag = oclifFlags[name]!;
    // Duration flags are oclif custom option flags with a parse function (src/flags.ts durationFlag).
    const type = flag.type === 'boolean' ? 'boolean' : flag.options !== undefined ? 'option' : typeof flag.parse === 'function' && 'defaultHelp' in flag ? 'duration' : 'string';
    expect(spec.type).toBe(type);
    expect(spec.char).toBe(flag.char);
    expect(spec.env).toBe(flag.env);
    expect(spec.options).toEqual(flag.options);
    expect(spec.multiple === true).toBe(flag.multiple === true);
    expect(spec.aliases ?? []).toEqual(flag.aliases ?? []);
    expect(flag.allowNo === true).toBe(false); // the entry takes no --no-FLAG
  });

  it('the same defaults (no flags given, no environment)', async () => {
    const { entry, oclif } = await both([]);
    expect(oclif.error).toBeUndefined();
    expect(entry).toEqual(oclif.flags);
    expect(entry).toMatchObject({ 'root-dir': '/var/lib/klet', 'runtime-request-timeout': 120_000, timeout: 300_000, settle: 3000, wait: 'running', output: 'table', cleanup: false });
  });
});

/** Argument lists users and scripts pass: the entry must take every one, as oclif does. */
const TAKEN: string[][] = [
  ['--manifest-dir', '/etc/kubernetes/manifests'],
  ['--manifest-dir=./m', '--cleanup', '-o', 'json'],
  ['--manifest-dir', 'm', '--root-dir', '/tmp/k', '--container-runtime-endpoint', 'unix:///tmp/k/containerd.sock', '--node-name', 'Node-A'],
  ['--manifest-dir', 'm', '-ojson'],
  ['--manifest-dir', 'm', '-o=yaml'],
  ['--manifest-dir', 'm', '--json'],
  ['--manifest-dir', 'm', '--output', 'yaml', '--log-level', 'debug'],
  ['--manifest-dir', 'm', '--wait', 'ready', '--timeout', '10m'],
  ['--manifest-dir', 'm', '--settle', '0'],
  ['--pod-manifest-path', '/etc/kubernetes/manifests/etcd.yaml'],
  ['--pod-manifest-path=m', '-o', 'json'],
  ['--manifest-dir', 'm', '--settle=0s', '--wait', 'ready'],
  ['--manifest-dir', 'm', '--settle', '500ms'],
  ['--manifest-dir', 'm', '--timeout=1m30s', '--runtime-request-timeout', '500ms'],
  ['--manifest-dir', 'm', '--exit-code-from', 'migrate', '--cleanup', '-o', 'json'],
  ['--manifest-url', 'https://config.example/pods.yaml', '--manifest-url-header', 'Authorization: Bearer x', '--manifest-url-header', 'X-A: b'],
  ['--manifest-url=http://127.0.0.1:8080/p', '--manifest-url-header=X: y'],
  ['--objects', 'objs', '--manifest-dir', 'm', '--cleanup', '--cleanup'],
  ['--log-level', 'warn', '--manifest-dir', 'm', '--root-dir', '/tmp/k'],
];

const COMMON = commonShapes('cleanup');

/** Argument lists oclif refuses (usage errors, --help): the entry must leave them all to oclif; the common ones and this command's own. */
const REFUSED: string[][] = [
  ...COMMON.refused,
  ['--manifest-dir', 'm', 'stray'],
  ['--wait', 'sometimes'],
  ['-o', 'xml'],
  ['-ox'],
  ['--timeout', '0s'],
  ['--timeout', '5'],
  ['--timeout=-1s'],
  ['--settle', '-1s'],
  ['--manifest-dir', 'a', '--pod-manifest-path', 'b'],
  ['--settle', '3'],
  ['--runtime-request-timeout', 'soon'],
  ['-x'],
];

describe('the two parsers agree', () => {
  parsersAgree(both, { taken: TAKEN, left: COMMON.left, refused: REFUSED });
});
