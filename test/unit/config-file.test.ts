import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PodConfig, type PodUpdate } from '../../src/lib/config/config.js';
import { FileSource, type FileSourceOptions } from '../../src/lib/config/file.js';
import { setLogSink } from '../../src/lib/log.js';

const NODE = 'node1';

function podYaml(name: string, image = 'busybox:1.36'): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: main\n    image: ${image}\n`;
}

let tmp: string;
let running: PodConfig[] = [];
beforeAll(async () => {
  setLogSink(() => {});
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'klet-config-file-'));
});
afterEach(async () => {
  await Promise.all(running.map((c) => c.stop()));
  running = [];
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

let dirs = 0;
async function freshDir(): Promise<string> {
  const d = path.join(tmp, `m${++dirs}`);
  await fs.mkdir(d, { recursive: true });
  return d;
}

/** Write the way editors and config management do: a temp file renamed into place. */
async function put(file: string, text: string): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  await fs.writeFile(temp, text);
  await fs.rename(temp, file);
}

/** A started PodConfig with one FileSource, and a reader of its updates. */
function start(opts: Omit<FileSourceOptions, 'nodeName'>) {
  const config = new PodConfig();
  config.addSource(new FileSource({ nodeName: NODE, fileCheckFrequencyMs: 60_000, ...opts }));
  config.start();
  running.push(config);
  const seen: PodUpdate[] = [];
  /** The next update, within `ms`. */
  const next = async (ms = 1000): Promise<PodUpdate> => {
    const u = await config.updates.next(AbortSignal.timeout(ms)).catch(() => {
      throw new Error(`no update within ${ms} ms (seen so far: ${seen.map((s) => s.op).join(', ') || 'none'})`);
    });
    seen.push(u);
    return u;
  };
  /** Wait (bounded) until `cond` holds; fail with what errors() says otherwise. */
  const until = async (cond: () => boolean, ms = 2000): Promise<void> => {
    const deadline = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms; errors: ${JSON.stringify([...config.errors()])}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const errors = (): string[] => (config.errors().get('file') ?? []).map(String);
  return { config, next, until, errors };
}

describe('FileSource', () => {
  it('sees a new file, an edit (same UID) and a removal through fs events', async () => {
    const dir = await freshDir();
    const { config, next } = start({ path: dir });
    expect(await next()).toEqual({ op: 'ADD', source: 'file', pods: [] });
    expect(config.sourcesReady()).toBe(true);

    await fs.writeFile(path.join(dir, 'web.yaml'), podYaml('web'));
    const add = await next(1000);
    expect(add.op).toBe('ADD');
    expect(add.pods.map((p) => p.metadata?.name)).toEqual(['web-node1']);
    const uid = add.pods[0]?.metadata?.uid;

    await fs.writeFile(path.join(dir, 'web.yaml'), podYaml('web', 'busybox:1.37'));
    const update = await next(1000);
    expect(update.op).toBe('UPDATE');
    expect(update.pods[0]?.metadata?.uid).toBe(uid);
    expect(update.pods[0]?.spec?.containers[0]?.image).toBe('busybox:1.37');

    await fs.rm(path.join(dir, 'web.yaml'));
    const remove = await next(1000);
    expect(remove.op).toBe('REMOVE');
    expect(remove.pods[0]?.metadata?.uid).toBe(uid);
  });

  it('reports an invalid file without touching the others, and keeps the last good pods of a file that breaks', async () => {
    const dir = await freshDir();
    await put(path.join(dir, 'a.yaml'), podYaml('a'));
    await put(path.join(dir, 'b.yaml'), podYaml('b'));
    const { config, next, until, errors } = start({ path: dir });
    expect((await next()).pods.map((p) => p.metadata?.name)).toEqual(['a-node1', 'b-node1']);

    await put(path.join(dir, 'bad.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: main\n');
    await until(() => errors().length > 0);
    expect(errors()).toEqual([`${path.join(dir, 'bad.yaml')}:7: spec.containers[0].image: Required value`]);

    // b.yaml breaks: b keeps running on its last good version.
    await put(path.join(dir, 'b.yaml'), podYaml('b').replace('image:', 'imag:'));
    await until(() => errors().length === 2);
    // In file name order: b.yaml, bad.yaml.
    expect(errors()[0]).toMatch(/\/b\.yaml:8: spec\.containers\[0\]\.imag: unknown field$/);

    // a.yaml changes meanwhile: that still applies.
    await put(path.join(dir, 'a.yaml'), podYaml('a', 'busybox:1.37'));
    const update = await next(1000);
    expect(update.op).toBe('UPDATE');
    expect(update.pods.map((p) => p.metadata?.name)).toEqual(['a-node1']);
    expect(config.pods().map((p) => p.metadata?.name).sort()).toEqual(['a-node1', 'b-node1']);

    // Fixed: errors clear, nothing was removed.
    await fs.rm(path.join(dir, 'bad.yaml'));
    await put(path.join(dir, 'b.yaml'), podYaml('b'));
    await until(() => errors().length === 0);
    expect(config.updates.size).toBe(0);
  });

  it('keeps every pod while the directory is deleted, and converges when it is back', async () => {
    const dir = await freshDir();
    await put(path.join(dir, 'a.yaml'), podYaml('a'));
    await put(path.join(dir, 'b.yaml'), podYaml('b'));
    const { config, next, until, errors } = start({ path: dir });
    const first = await next();
    const uidOf = (name: string) => first.pods.find((p) => p.metadata?.name === name)?.metadata?.uid;

    await fs.rm(dir, { recursive: true });
    await until(() => errors().length > 0);
    expect(errors()).toEqual([`${dir}: manifest directory does not exist`]);
    // Several debounce periods later: still nothing removed.
    await new Promise((r) => setTimeout(r, 400));
    expect(config.updates.size).toBe(0);
    expect(config.pods()).toHaveLength(2);

    // Back, as a whole (renamed into place), with a edited and b gone.
    const staging = path.join(tmp, `staging-${path.basename(dir)}`);
    await fs.mkdir(staging);
    await fs.writeFile(path.join(staging, 'a.yaml'), podYaml('a', 'busybox:1.37'));
    await fs.rename(staging, dir);
    const remove = await next(1500);
    expect(remove.op).toBe('REMOVE');
    expect(remove.pods.map((p) => p.metadata?.uid)).toEqual([uidOf('b-node1')]);
    const update = await next(1000);
    expect(update.op).toBe('UPDATE');
    expect(update.pods.map((p) => p.metadata?.uid)).toEqual([uidOf('a-node1')]);
    expect(errors()).toEqual([]);

    // The watch follows the new directory.
    await fs.writeFile(path.join(dir, 'c.yaml'), podYaml('c'));
    expect((await next(1000)).pods.map((p) => p.metadata?.name)).toEqual(['c-node1']);
  });

  it('is not ready while the directory does not exist, and starts when it appears', async () => {
    const dir = path.join(tmp, 'later');
    const { config, next, until, errors } = start({ path: dir });
    await until(() => errors().length > 0);
    expect(errors()).toEqual([`${dir}: manifest directory does not exist`]);
    expect(config.sourcesReady()).toBe(false);
    const staging = path.join(tmp, 'later-staging');
    await fs.mkdir(staging);
    await fs.writeFile(path.join(staging, 'a.yaml'), podYaml('a'));
    await fs.rename(staging, dir);
    const add = await next(1500);
    expect(add.pods.map((p) => p.metadata?.name)).toEqual(['a-node1']);
    expect(config.sourcesReady()).toBe(true);
  });

  it('re-reads every fileCheckFrequencyMs, so a change no event reported still converges', async () => {
    const dir = await freshDir();
    await put(path.join(dir, 'a.yaml'), podYaml('a'));
    const { next } = start({ path: dir, watch: false, fileCheckFrequencyMs: 150 });
    const uid = (await next()).pods[0]?.metadata?.uid;
    const t0 = Date.now();
    await fs.writeFile(path.join(dir, 'a.yaml'), podYaml('a', 'busybox:1.37'));
    const update = await next(1500);
    expect(update.op).toBe('UPDATE');
    expect(update.pods[0]?.metadata?.uid).toBe(uid);
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('reads a single manifest file given as the path, watching its directory', async () => {
    const dir = await freshDir();
    const file = path.join(dir, 'etcd.yaml');
    await put(file, podYaml('etcd'));
    await put(path.join(dir, 'other.yaml'), podYaml('other'));
    const { next } = start({ path: file });
    expect((await next()).pods.map((p) => p.metadata?.name)).toEqual(['etcd-node1']);
    await put(file, podYaml('etcd', 'busybox:1.37'));
    const update = await next(1000);
    expect(update.op).toBe('UPDATE');
    expect(update.pods[0]?.spec?.containers[0]?.image).toBe('busybox:1.37');
  });

  it('carries the ConfigMaps and Secrets of the directory', async () => {
    const dir = await freshDir();
    await put(path.join(dir, 'cfg.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n');
    const { config, next } = start({ path: dir });
    await next();
    expect(config.objects('file').configMaps.map((c) => c.data)).toEqual([{ k: 'v' }]);
  });

  it('releases its watcher and timers on stop', async () => {
    const dir = await freshDir();
    const source = new FileSource({ path: dir, nodeName: NODE });
    const controller = new AbortController();
    const reads: number[] = [];
    let firstRead!: () => void;
    const first = new Promise<void>((r) => (firstRead = r));
    const record = (n: number) => {
      reads.push(n);
      firstRead();
    };
    const done = source.run({ snapshot: () => record(1), failed: () => record(0) }, controller.signal);
    // Stop after the first read however long it takes on a loaded machine.
    await first;
    controller.abort();
    await done;
    await fs.writeFile(path.join(dir, 'a.yaml'), podYaml('a'));
    await new Promise((r) => setTimeout(r, 300));
    expect(reads).toEqual([1]);
  });
});
