/**
 * src/cli/cached-script.ts: the runonce bundle loads through a V8 code cache
 * written at the end of the first run. Each case is a real Node process (the
 * cache is written at exit) loading a small CommonJS bundle in a scratch
 * directory through the built dist/cli/cached-script.js.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const loader = path.join(__dirname, '../../dist/cli/cached-script.js');
let dir: string;
let bundle: string;

const BUNDLE = `'use strict';
function work(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }
exports.answer = () => work(10) - 3;
exports.strict = () => { try { undeclared = 1; return false; } catch { return true; } };
exports.grpc = () => typeof require('@grpc/grpc-js').Server;
exports.file = () => __filename;
`;

/** Load the bundle in a fresh process: how it was loaded, and what its exports say. */
function load(env: Record<string, string> = {}, nodeArgs: string[] = []): { how: string; answer: number; strict: boolean; file: string; stderr: string } {
  const code = `import { loadBundle } from ${JSON.stringify(loader)};
const { how, exports: e } = loadBundle(${JSON.stringify(bundle)});
process.stdout.write(JSON.stringify({ how, answer: e.answer(), strict: e.strict(), file: e.file() }));`;
  const r = spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '', ...env } });
  expect(r.status, r.stderr).toBe(0);
  return { ...JSON.parse(r.stdout), stderr: r.stderr };
}
const caches = () => fs.readdirSync(dir).filter((n) => n.endsWith('.cache'));

beforeEach(() => {
  // Under the project's node_modules, so the bundle's import() of a package it left out resolves from its own file.
  const base = path.join(__dirname, '../../node_modules/.cache');
  fs.mkdirSync(base, { recursive: true });
  dir = fs.mkdtempSync(path.join(base, 'klet-cached-script-'));
  fs.chmodSync(dir, 0o755);
  bundle = path.join(dir, 'b.cjs');
  fs.writeFileSync(bundle, BUNDLE);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('loadBundle', () => {
  it('compiles on the first run and writes the cache at exit; the next run loads from it', () => {
    const first = load();
    expect(first).toMatchObject({ how: 'compiled', answer: 42, strict: true, file: bundle });
    expect(caches()).toHaveLength(1);
    const [name] = caches();
    expect(name).toMatch(new RegExp(`^\\.b\\.cjs\\.[0-9a-f]{8}-${BUNDLE.length}-${process.version.replace(/\./g, '\\.')}-${process.arch}\\.cache$`));
    expect(fs.statSync(path.join(dir, name as string)).mode & 0o777).toBe(0o600);
    expect(load()).toMatchObject({ how: 'cache', answer: 42, strict: true });
    expect(caches()).toEqual([name]);
  });

  it('a changed bundle gets a new cache, and the old one goes', () => {
    load();
    const [old] = caches();
    fs.writeFileSync(bundle, BUNDLE.replace('work(10) - 3', 'work(10) - 4 + 1'));
    expect(load()).toMatchObject({ how: 'compiled', answer: 42 });
    expect(caches()).toHaveLength(1);
    expect(caches()).not.toContain(old);
    expect(load().how).toBe('cache');
  });

  it('a damaged cache (bytes changed) fails its checksum: compiled past and written again', () => {
    load();
    const file = path.join(dir, caches()[0] as string);
    const bytes = fs.readFileSync(file);
    bytes.fill(7, 64, 256);
    fs.writeFileSync(file, bytes);
    expect(load()).toMatchObject({ how: 'compiled', answer: 42 });
    expect(load().how).toBe('cache');
  });

  it('other V8 flags: V8 refuses the cache, the bundle is compiled and the cache written for them', () => {
    load();
    expect(load({}, ['--stack-size=500'])).toMatchObject({ how: 'compiled', answer: 42 });
    expect(load({}, ['--stack-size=500']).how).toBe('cache');
    expect(load().how).toBe('compiled');
  });

  it('a cache that someone else could have written is not read', () => {
    load();
    const file = path.join(dir, caches()[0] as string);
    fs.chmodSync(file, 0o622);
    expect(load().how).toBe('compiled');
    // ... and is replaced by one only we can write.
    expect(fs.statSync(path.join(dir, caches()[0] as string)).mode & 0o777).toBe(0o600);
    expect(load().how).toBe('cache');
  });

  it('a cache behind a symbolic link is not read', () => {
    load();
    const file = path.join(dir, caches()[0] as string);
    fs.renameSync(file, path.join(dir, 'elsewhere'));
    fs.symlinkSync(path.join(dir, 'elsewhere'), file);
    expect(load().how).toBe('compiled');
  });

  it('a directory others may write to: no cache, the bundle is required', () => {
    fs.chmodSync(dir, 0o777);
    expect(load()).toMatchObject({ how: 'require', answer: 42, strict: true });
    expect(caches()).toEqual([]);
  });

  it('a read-only directory (a read-only mount): no cache, the bundle is required', () => {
    // Root may write anywhere the mount allows: a read-only bind mount of the directory over itself.
    expect(spawnSync('mount', ['--bind', dir, dir]).status).toBe(0);
    try {
      expect(spawnSync('mount', ['-o', 'remount,bind,ro', dir]).status).toBe(0);
      expect(load()).toMatchObject({ how: 'require', answer: 42 });
    } finally {
      spawnSync('umount', [dir]);
    }
    expect(caches()).toEqual([]);
  });

  it('NODE_DISABLE_COMPILE_CACHE=1: no cache, the bundle is required', () => {
    expect(load({ NODE_DISABLE_COMPILE_CACHE: '1' })).toMatchObject({ how: 'require', answer: 42 });
    expect(caches()).toEqual([]);
  });

  it('source maps on (--log-level debug): the bundle is required, so Node maps its stacks', () => {
    expect(load({}, ['--enable-source-maps']).how).toBe('require');
    expect(caches()).toEqual([]);
  });

  it("require() of a package left out of the bundle resolves from the bundle's file, cached or not", () => {
    const code = (n: number) => `import { loadBundle } from ${JSON.stringify(loader)};
const { how, exports: e } = loadBundle(${JSON.stringify(bundle)});
process.stdout.write(how + ' ' + e.grpc() + ' ${n}');`;
    for (const [n, how] of [
      [1, 'compiled'],
      [2, 'cache'],
    ] as const) {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', code(n)], { encoding: 'utf8', env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '' }, cwd: os.tmpdir() });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe(`${how} function ${n}`);
    }
  });
});
