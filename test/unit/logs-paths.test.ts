import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { containerLogDir, latestLogFile, podLogDir } from '../../src/lib/logs/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'klet-logpaths-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('log paths', () => {
  it('builds the kubelet layout', () => {
    expect(podLogDir('kube-system', 'etcd-node1', '1234-abcd')).toBe('/var/log/pods/kube-system_etcd-node1_1234-abcd');
    expect(podLogDir('default', 'web', 'u1', '/tmp/pods')).toBe('/tmp/pods/default_web_u1');
    expect(containerLogDir('/tmp/pods/default_web_u1', 'nginx')).toBe('/tmp/pods/default_web_u1/nginx');
  });

  it('picks the highest restart count, numerically, ignoring rotated files', async () => {
    for (const name of ['0.log', '2.log', '10.log', '10.log.20240501-100000', '11.log.20240501-100000.gz', 'x.log']) {
      await writeFile(path.join(dir, name), '');
    }
    expect(await latestLogFile(dir)).toBe(path.join(dir, '10.log'));
    expect(await latestLogFile(dir, { previous: true })).toBe(path.join(dir, '2.log'));
  });

  it('returns null when there is nothing to pick', async () => {
    expect(await latestLogFile(path.join(dir, 'missing'))).toBeNull();
    expect(await latestLogFile(dir)).toBeNull();
    await mkdir(path.join(dir, 'c'));
    await writeFile(path.join(dir, 'c', '0.log'), '');
    expect(await latestLogFile(path.join(dir, 'c'))).toBe(path.join(dir, 'c', '0.log'));
    expect(await latestLogFile(path.join(dir, 'c'), { previous: true })).toBeNull();
  });
});
