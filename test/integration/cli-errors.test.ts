/**
 * Bad input to the built CLI: each mistake gives ONE line on stderr that
 * names the input, a non-zero exit code, and no stack trace (stacks only
 * with --log-level debug); with -o json the error is a JSON object on stdout.
 *
 * No test here touches the machine's default endpoint
 * (/run/containerd/containerd.sock): every command that could reach a
 * runtime gets an explicit endpoint under a temp dir.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, cleanEnv, explain, nonEmptyLines, runKlet, type CliResult } from '../helpers/cli.js';

let tmp = '';
/** An endpoint under tmp where nothing listens and no file exists. */
let missingEndpoint = '';

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-cli-err-'));
  missingEndpoint = `unix://${path.join(tmp, `nonexistent-${randomBytes(4).toString('hex')}.sock`)}`;
});

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/**
 * The run failed with `code` and exactly one non-empty stderr line,
 * `error: ...`, containing every string of `mentions`; nothing on stdout;
 * no stack frame anywhere. Returns the line.
 */
function expectOneLineError(r: CliResult, code: number, mentions: string[]): string {
  expect(r.timedOut, explain(r)).toBe(false);
  expect(r.code, explain(r)).toBe(code);
  const lines = nonEmptyLines(r.stderr);
  expect(lines, explain(r)).toHaveLength(1);
  const line = lines[0] as string;
  expect(line).toMatch(/^error: /);
  for (const m of mentions) expect(line, explain(r)).toContain(m);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stdout, explain(r)).toBe('');
  return line;
}

/** A tar with the given entries (name → content). */
async function makeTar(file: string, entries: Record<string, string>): Promise<void> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  for (const [name, content] of Object.entries(entries)) {
    await new Promise<void>((resolve, reject) =>
      pack.entry({ name, mtime: new Date(0) }, content, (err) => (err ? reject(err) : resolve())),
    );
  }
  pack.finalize();
  await done;
  fs.writeFileSync(file, Buffer.concat(chunks));
}

describe('the container runtime endpoint', () => {
  it('a socket that does not exist: names the endpoint, asks whether containerd runs', async () => {
    const r = await runKlet(['images', 'ls', '--container-runtime-endpoint', missingEndpoint]);
    expectOneLineError(r, 1, [missingEndpoint, 'is containerd running?']);
  });

  it('global flags may come before the command, as with the kubelet', async () => {
    const r = await runKlet(['--container-runtime-endpoint', missingEndpoint, 'images', 'ls']);
    expectOneLineError(r, 1, [missingEndpoint, 'is containerd running?']);
    const eq = await runKlet([`--container-runtime-endpoint=${missingEndpoint}`, '--log-level', 'warn', 'images', 'ls']);
    expectOneLineError(eq, 1, [missingEndpoint, 'is containerd running?']);
  });

  it('every global flag is accepted before the command', async () => {
    // The GLOBAL flags from the manifest, so a new one cannot be forgotten in bin/run.js.
    const manifest = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, { flags: Record<string, { helpGroup?: string; type: string }> }>;
    };
    const globals = Object.entries(manifest.commands['images:ls']?.flags ?? {})
      .filter(([, f]) => f.helpGroup === 'GLOBAL')
      .map(([name, f]) => ({ name, type: f.type }));
    expect(globals.map((g) => g.name).sort()).toEqual(
      ['container-runtime-endpoint', 'log-level', 'node-name', 'root-dir', 'runtime-request-timeout'].sort(),
    );
    const values: Record<string, string> = {
      'container-runtime-endpoint': missingEndpoint,
      'log-level': 'info',
      'node-name': 'node-1',
      'root-dir': path.join(tmp, 'root-global'),
      'runtime-request-timeout': '5s',
    };
    for (const g of globals) {
      expect(g.type, `--${g.name} takes a value`).toBe('option');
      const endpoint = g.name === 'container-runtime-endpoint' ? [] : ['--container-runtime-endpoint', missingEndpoint];
      const r = await runKlet([`--${g.name}`, values[g.name] as string, 'images', 'ls', ...endpoint]);
      expectOneLineError(r, 1, [missingEndpoint, 'is containerd running?']);
    }
  });

  it('a scheme other than unix://: names --container-runtime-endpoint, exit 2', async () => {
    const r = await runKlet(['images', 'ls', '--container-runtime-endpoint', 'tcp://1.2.3.4:1']);
    expectOneLineError(r, 2, ['--container-runtime-endpoint', 'tcp://1.2.3.4:1', 'only unix://']);
  });

  it('a path that exists but is a plain file, not a socket', async () => {
    const file = path.join(tmp, 'plain-file.sock');
    fs.writeFileSync(file, 'not a socket\n');
    const endpoint = `unix://${file}`;
    const r = await runKlet(['images', 'ls', '--container-runtime-endpoint', endpoint]);
    expectOneLineError(r, 1, [endpoint, 'is not a socket']);
  });

  it('a socket that accepts and never answers: deadline error within --runtime-request-timeout', async () => {
    const sock = path.join(tmp, 'silent.sock');
    const conns = new Set<net.Socket>();
    const server = net.createServer((c) => {
      conns.add(c);
      c.on('close', () => conns.delete(c));
      c.on('error', () => undefined);
      // Read and never write.
    });
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      const endpoint = `unix://${sock}`;
      const r = await runKlet(['images', 'ls', '--container-runtime-endpoint', endpoint, '--runtime-request-timeout', '2s'], {
        timeoutMs: 30_000,
      });
      expectOneLineError(r, 1, [endpoint, 'did not answer ListImages within 2s']);
      expect(r.durationMs).toBeGreaterThanOrEqual(2000);
      expect(r.durationMs, 'gave up within a few seconds').toBeLessThan(8000);
    } finally {
      for (const c of conns) c.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('runtime start without containerd installed', () => {
  let binDir = '';

  beforeAll(() => {
    // A PATH with node and nothing else.
    binDir = path.join(tmp, 'bin-node-only');
    fs.mkdirSync(binDir);
    fs.symlinkSync(process.execPath, path.join(binDir, 'node'));
  });

  it('names containerd and the package to install, and creates nothing', async () => {
    const rootDir = path.join(tmp, 'root-no-containerd');
    const endpoint = `unix://${path.join(rootDir, 'containerd.sock')}`;
    const r = await runKlet(['runtime', 'start', '--root-dir', rootDir, '--container-runtime-endpoint', endpoint], {
      extraEnv: { PATH: binDir },
    });
    expectOneLineError(r, 1, ['containerd', 'apt-get install containerd']);
    expect(fs.existsSync(rootDir), `${rootDir} was created`).toBe(false);
  });

  it('leaves an existing root dir as it was', async () => {
    const rootDir = fs.mkdtempSync(path.join(tmp, 'root-existing-'));
    const endpoint = `unix://${path.join(rootDir, 'containerd.sock')}`;
    const r = await runKlet(['runtime', 'start', '--root-dir', rootDir, '--container-runtime-endpoint', endpoint], {
      extraEnv: { PATH: binDir },
    });
    expectOneLineError(r, 1, ['containerd is not installed']);
    expect(fs.readdirSync(rootDir)).toEqual([]);
  });
});

describe('images import of a bad file', () => {
  // The validation must come before any connection: the endpoint does not
  // exist, and the error must be about the file, not the endpoint.
  async function importFile(file: string): Promise<{ r: CliResult; rootDir: string }> {
    const rootDir = fs.mkdtempSync(path.join(tmp, 'root-import-'));
    const r = await runKlet(['images', 'import', file, '--root-dir', rootDir, '--container-runtime-endpoint', missingEndpoint]);
    return { r, rootDir };
  }

  function expectUntouched(rootDir: string): void {
    expect(fs.readdirSync(rootDir)).toEqual([]);
    expect(fs.existsSync(missingEndpoint.slice('unix://'.length))).toBe(false);
  }

  it('a file that does not exist', async () => {
    const file = path.join(tmp, 'no-such-image.tar');
    const { r, rootDir } = await importFile(file);
    const line = expectOneLineError(r, 2, [file, 'no such file']);
    expect(line).not.toContain('cannot reach');
    expectUntouched(rootDir);
  });

  it('random bytes', async () => {
    const file = path.join(tmp, 'random.bin');
    fs.writeFileSync(file, randomBytes(8192));
    const { r, rootDir } = await importFile(file);
    const line = expectOneLineError(r, 2, [file, 'not a tar archive']);
    expect(line).not.toContain('cannot reach');
    expectUntouched(rootDir);
  });

  it('a tar without oci-layout', async () => {
    const file = path.join(tmp, 'plain.tar');
    await makeTar(file, { 'hello.txt': 'hello\n', 'index.json': '{"schemaVersion":2,"manifests":[]}' });
    const { r, rootDir } = await importFile(file);
    const line = expectOneLineError(r, 2, [file, 'not an OCI image layout archive', 'oci-layout']);
    expect(line).not.toContain('cannot reach');
    expectUntouched(rootDir);
  });

  it('a directory', async () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'a-dir-'));
    const { r, rootDir } = await importFile(dir);
    expectOneLineError(r, 2, [dir]);
    expectUntouched(rootDir);
  });
});

describe('usage errors: exit 2, one line naming the input', () => {
  const endpoint = (): string[] => ['--container-runtime-endpoint', missingEndpoint];

  it('an unknown flag', async () => {
    const r = await runKlet(['images', 'ls', '--bogus', ...endpoint()]);
    expectOneLineError(r, 2, ['--bogus', 'klet images ls --help']);
  });

  it('a bad KLET_ENTRY (the environment variable that sends runonce through oclif)', async () => {
    const r = await runKlet(['runonce', '--manifest-dir', tmp, ...endpoint()], { extraEnv: { KLET_ENTRY: 'fast' } });
    expectOneLineError(r, 2, ['KLET_ENTRY', '"fast"', 'oclif']);
  });

  it('a bad --log-level', async () => {
    const r = await runKlet(['images', 'ls', '--log-level', 'loud', ...endpoint()]);
    expectOneLineError(r, 2, ['--log-level', 'loud', 'error, warn, info, debug']);
  });

  it('a bad --runtime-request-timeout', async () => {
    const r = await runKlet(['images', 'ls', '--runtime-request-timeout', 'abc', ...endpoint()]);
    expectOneLineError(r, 2, ['--runtime-request-timeout', '"abc"', 'not a positive duration']);
  });

  it('a bad --runtime-request-timeout, also where no CRI call is made', async () => {
    const rootDir = path.join(tmp, 'root-stop-timeout');
    const r = await runKlet(['runtime', 'stop', '--runtime-request-timeout', 'abc', '--root-dir', rootDir, ...endpoint()]);
    expectOneLineError(r, 2, ['--runtime-request-timeout', '"abc"']);
  });

  it('-o xml', async () => {
    const r = await runKlet(['images', 'ls', '-o', 'xml', ...endpoint()]);
    expectOneLineError(r, 2, ['--output', 'xml', 'table, json, yaml']);
  });

  it('a missing argument', async () => {
    const r = await runKlet(['images', 'import', ...endpoint()]);
    expectOneLineError(r, 2, ['file']);
  });

  it('sync --auth-token-file without --listen (the token would guard nothing)', async () => {
    const token = path.join(tmp, 'token');
    fs.writeFileSync(token, 'secret-token-value\n', { mode: 0o600 });
    const r = await runKlet(['sync', '--auth-token-file', token, '--root-dir', path.join(tmp, 'root-token'), ...endpoint()]);
    const line = expectOneLineError(r, 2, ['--auth-token-file', token, '--listen']);
    expect(line).not.toContain('secret-token-value');
  });
});

describe('klet sync: eviction thresholds the kubelet refuses', () => {
  it.each([
    [['--eviction-hard', 'disk.free<1Gi'], ['--eviction-hard', 'unsupported eviction signal disk.free']],
    [['--eviction-hard', 'nodefs.available<150%'], ['--eviction-hard', 'must be <= 100%: 150%']],
    [['--eviction-hard', 'memory.available<-100Mi'], ['--eviction-hard', 'must be positive: -100Mi']],
    [['--eviction-soft', 'memory.available<1Gi'], ['--eviction-soft', 'grace period must be specified for the soft eviction threshold memory.available']],
    [['--eviction-minimum-reclaim', 'nodefs.available=lots'], ['--eviction-minimum-reclaim', 'quantities must match']],
  ])('%j: exit 2, one line naming the flag, nothing made', async (args, words) => {
    const rootDir = path.join(tmp, `root-eviction-${randomBytes(3).toString('hex')}`);
    const r = await runKlet(['sync', '--manifest-dir', path.join(tmp, 'no-manifests'), '--root-dir', rootDir, '--container-runtime-endpoint', missingEndpoint, ...args]);
    expectOneLineError(r, 2, words);
    expect(fs.existsSync(rootDir)).toBe(false);
  });
});

describe('klet sync: the kubelet server\'s flags', () => {
  const run = (root: string, args: string[]) =>
    runKlet(['sync', '--manifest-dir', path.join(tmp, 'no-manifests'), '--root-dir', path.join(tmp, root), '--container-runtime-endpoint', missingEndpoint, ...args]);
  it('a webhook without an API server', async () => {
    const r = await run('ks1', ['--port', '10250', '--authorization-mode', 'Webhook', '--authentication-token-webhook=false', '--client-ca-file', '/etc/hostname']);
    expectOneLineError(r, 2, ['--authorization-mode', 'needs --kubeconfig']);
    expect(fs.existsSync(path.join(tmp, 'ks1', 'pki'))).toBe(false);
  });
  it('no way to authenticate (standalone, no client CA, no anonymous requests)', async () => {
    const r = await run('ks2', ['--port', '10250']);
    expectOneLineError(r, 2, ['--client-ca-file', 'no way to authenticate']);
  });
  it('a client CA file that is missing or holds no certificate', async () => {
    let r = await run('ks3', ['--port', '10250', '--client-ca-file', path.join(tmp, 'nosuch-ca.crt')]);
    expectOneLineError(r, 2, ['--client-ca-file', 'nosuch-ca.crt', 'no such file']);
    fs.writeFileSync(path.join(tmp, 'junk-ca.crt'), 'junk\n');
    r = await run('ks3', ['--port', '10250', '--client-ca-file', path.join(tmp, 'junk-ca.crt')]);
    expectOneLineError(r, 2, ['--client-ca-file', 'junk-ca.crt', 'no PEM certificate']);
  });
  it('a certificate without its key, a bad address, a server flag without a server', async () => {
    let r = await run('ks4', ['--port', '10250', '--anonymous-auth=true', '--tls-cert-file', '/etc/hostname']);
    expectOneLineError(r, 2, ['--tls-cert-file', 'without its private key']);
    r = await run('ks4', ['--port', '10250', '--anonymous-auth=true', '--address', 'nowhere']);
    expectOneLineError(r, 2, ['--address', '"nowhere"', 'not an IP address']);
    r = await run('ks4', ['--client-ca-file', '/etc/hostname']);
    expectOneLineError(r, 2, ['--client-ca-file', 'configures the kubelet server', '--kubeconfig or --port']);
    r = await run('ks4', ['--port', '10250', '--authorization-mode', 'Sometimes']);
    expectOneLineError(r, 2, ['--authorization-mode', 'Sometimes']);
    expect(fs.existsSync(path.join(tmp, 'ks4', 'pki'))).toBe(false);
  });
});

describe('-o json errors', () => {
  interface ErrorJson {
    error: { code: string; message: string; suggestions: string[] };
  }

  function expectJsonError(r: CliResult, exit: number, code: string, mentions: string[]): ErrorJson {
    expect(r.code, explain(r)).toBe(exit);
    let json: ErrorJson;
    try {
      json = JSON.parse(r.stdout) as ErrorJson;
    } catch {
      throw new Error(`stdout is not JSON: ${explain(r)}`);
    }
    expect(Object.keys(json)).toEqual(['error']);
    expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'suggestions']);
    expect(json.error.code).toBe(code);
    expect(json.error.message).not.toContain('\n');
    for (const m of mentions) expect(json.error.message).toContain(m);
    expect(Array.isArray(json.error.suggestions)).toBe(true);
    expect(r.stderr, explain(r)).toBe('');
    return json;
  }

  it('an unreachable runtime', async () => {
    const r = await runKlet(['images', 'ls', '-o', 'json', '--container-runtime-endpoint', missingEndpoint]);
    const json = expectJsonError(r, 1, 'CRI_UNAVAILABLE', [missingEndpoint, 'is containerd running?']);
    expect(json.error.suggestions).toContain('start one with: klet runtime start');
    // The flag is the command layer's to name (the library's error names no flag).
    expect(json.error.suggestions).toContain('or point klet at a running one with --container-runtime-endpoint');
  });

  it('bad input, with --json', async () => {
    const r = await runKlet(['images', 'ls', '--json', '--container-runtime-endpoint', 'tcp://1.2.3.4:1']);
    expectJsonError(r, 2, 'INVALID_INPUT', ['--container-runtime-endpoint']);
  });

  it('a bad file to import', async () => {
    const file = path.join(tmp, 'no-such.tar');
    const r = await runKlet(['images', 'import', file, '-o', 'json', '--container-runtime-endpoint', missingEndpoint]);
    expectJsonError(r, 2, 'INVALID_INPUT', [file]);
  });

  it('a usage error that stops flag parsing still gets JSON', async () => {
    for (const args of [
      ['--bogus', '-o', 'json'],
      ['--bogus', '-ojson'],
      ['--bogus', '--output=json'],
      ['--bogus', '--json'],
    ]) {
      const r = await runKlet(['images', 'ls', ...args, '--container-runtime-endpoint', missingEndpoint]);
      const json = expectJsonError(r, 2, 'USAGE', ['--bogus']);
      expect(json.error.suggestions).toEqual(['see: klet images ls --help']);
    }
  });
});

describe('--log-level debug', () => {
  it('keeps the one-line message first and adds the stack', async () => {
    const file = path.join(tmp, 'plain-file-debug.sock');
    fs.writeFileSync(file, '');
    const args = ['images', 'ls', '--container-runtime-endpoint', `unix://${file}`];
    const quiet = await runKlet(args);
    const line = expectOneLineError(quiet, 1, [file]);
    const debug = await runKlet([...args, '--log-level', 'debug']);
    expect(debug.code, explain(debug)).toBe(1);
    const lines = nonEmptyLines(debug.stderr);
    expect(lines[0]).toBe(line);
    expect(debug.stderr).toMatch(/^\s+at /m);
  });

  it('shows the stack of an unexpected (non-klet) error, which stays one line without it', async () => {
    // A root dir below a regular file: mkdir fails with ENOTDIR, an error klet
    // does not wrap. (containerd is on PATH here, so start gets that far.)
    const file = path.join(tmp, 'a-file');
    fs.writeFileSync(file, '');
    const rootDir = path.join(file, 'root');
    const args = ['runtime', 'start', '--root-dir', rootDir, '--container-runtime-endpoint', `unix://${path.join(tmp, 'unexpected.sock')}`];
    const quiet = await runKlet(args);
    const line = expectOneLineError(quiet, 1, [rootDir]);
    const debug = await runKlet([...args, '--log-level', 'debug']);
    expect(debug.code, explain(debug)).toBe(1);
    const lines = nonEmptyLines(debug.stderr);
    expect(lines[0]).toBe(line);
    expect(lines.some((l) => /^\s+at /.test(l)), explain(debug)).toBe(true);
  });

  it('runonce (run from its bundle): the stack names klet\'s TypeScript sources, not the bundle\'s chunks', async () => {
    const manifests = path.join(tmp, 'stack-manifests');
    fs.mkdirSync(manifests, { recursive: true });
    fs.writeFileSync(path.join(manifests, 'web.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n    - name: c\n      image: busybox\n');
    const r = await runKlet(['runonce', '--manifest-dir', manifests, '--exit-code-from', 'nobody', '--log-level', 'debug', '--container-runtime-endpoint', missingEndpoint]);
    expect(r.code, explain(r)).toBe(2);
    expect(nonEmptyLines(r.stderr)[0]).toMatch(/^error: --exit-code-from nobody: no such pod/);
    expect(r.stderr).toMatch(/^\s+at .*src\/lib\/services\/run-once\.ts:\d+:\d+/m);
    expect(r.stderr).not.toContain('dist/bundle/');
  });

  it('applies to usage errors too', async () => {
    const r = await runKlet(['images', 'ls', '--bogus', '--log-level', 'debug', '--container-runtime-endpoint', missingEndpoint]);
    expect(r.code, explain(r)).toBe(2);
    const lines = nonEmptyLines(r.stderr);
    expect(lines[0]).toMatch(/^error: Nonexistent flag: --bogus/);
    expect(r.stderr).toMatch(/^\s+at /m);
  });
});

describe('the helper', () => {
  it('runs with a clean environment: KLET_ROOT_DIR and CONTAINER_RUNTIME_ENDPOINT are not inherited', () => {
    process.env.KLET_ROOT_DIR = '/nonexistent';
    try {
      expect(cleanEnv().KLET_ROOT_DIR).toBeUndefined();
    } finally {
      delete process.env.KLET_ROOT_DIR;
    }
  });

  it('the environment variables are honoured when given', async () => {
    const r = await runKlet(['images', 'ls'], { extraEnv: { CONTAINER_RUNTIME_ENDPOINT: missingEndpoint } });
    expectOneLineError(r, 1, [missingEndpoint]);
  });
});
