/**
 * bin/run.js loads `klet runonce` from dist/bundle/ (scripts/bundle.js, the
 * last step of `npm run build`) only when the bundle is at least as new as
 * dist/cli/ in whole seconds: after a bare `tsc` (which rewrites every file of
 * dist/) it must run the modules just compiled, never a stale bundle. The
 * real entry runs against stand-in entries in a scratch layout.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/cli.js';

let root: string;
const modulesEntry = () => path.join(root, 'dist', 'cli', 'runonce-entry.js');
const bundleEntry = () => path.join(root, 'dist', 'bundle', 'runonce-entry.mjs');

/** A stand-in runonce entry that says which file it is and ends the command. */
const standIn = (name: string) => `export async function runOnceEntry() { process.stdout.write(${JSON.stringify(name)}); return true; }\n`;

function runonce(): string {
  const env = { ...process.env };
  delete env.KLET_ENTRY;
  const r = spawnSync(process.execPath, [path.join(root, 'bin', 'run.js'), 'runonce', '--manifest-dir', root], { encoding: 'utf8', env });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

function setTimes(file: string, seconds: number): void {
  fs.utimesSync(file, seconds, seconds);
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bin-bundle-'));
  fs.mkdirSync(path.join(root, 'bin'));
  fs.copyFileSync(path.join(PROJECT_ROOT, 'bin', 'run.js'), path.join(root, 'bin', 'run.js'));
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'klet', version: '0.0.0', type: 'module' }));
  fs.mkdirSync(path.dirname(modulesEntry()), { recursive: true });
  fs.mkdirSync(path.dirname(bundleEntry()), { recursive: true });
  fs.writeFileSync(modulesEntry(), standIn('modules'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('bin/run.js: runonce from dist/bundle/ or dist/cli/', () => {
  it('no bundle: the modules', () => {
    fs.rmSync(bundleEntry(), { force: true });
    expect(runonce()).toBe('modules');
  });

  it('a bundle built after the modules: the bundle', () => {
    fs.writeFileSync(bundleEntry(), standIn('bundle'));
    setTimes(modulesEntry(), 1_800_000_000);
    setTimes(bundleEntry(), 1_800_000_009);
    expect(runonce()).toBe('bundle');
  });

  it('copied or unpacked in the same second (tar and npm pack keep whole seconds): the bundle', () => {
    fs.utimesSync(modulesEntry(), 1_800_000_000.9, 1_800_000_000.9);
    fs.utimesSync(bundleEntry(), 1_800_000_000.1, 1_800_000_000.1);
    expect(runonce()).toBe('bundle');
  });

  it('modules compiled after the bundle (a bare tsc): the modules, not the stale bundle', () => {
    setTimes(bundleEntry(), 1_800_000_000);
    setTimes(modulesEntry(), 1_800_000_005);
    expect(runonce()).toBe('modules');
  });
});
