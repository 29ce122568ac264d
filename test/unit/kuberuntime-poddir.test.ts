import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { admitPod } from '../../src/lib/kuberuntime/lifecycle.js';
import { listPodRecords, otherNodeRecords, podDir, readPodRecord, recordOfOtherNode, writeEtcHosts, writePodRecord, writeSyncState } from '../../src/lib/kuberuntime/poddir.js';
import { readProbeResults, writeProbeResults } from '../../src/lib/prober/results.js';

const UID = '0123456789abcdef0123456789abcdef';
const pod: V1Pod = { metadata: { name: 'web-node1', namespace: 'default', uid: UID }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };

/** A pid no process has now: one that ran and exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid as number;
}

describe('pod dirs', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-poddir-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it("lists only the records of this node name's pods; the others are counted by node", async () => {
    const rec = (uid: string, nodeName?: string) => ({
      pod: { metadata: { name: `p-${uid}`, namespace: 'default', uid }, spec: { containers: [], ...(nodeName === undefined ? {} : { nodeName }) } },
      source: 'x.yaml',
      firstSeen: '2026-01-01T00:00:00.000Z',
    });
    await writePodRecord(root, rec('a1', 'node1'));
    await writePodRecord(root, rec('a2', 'Node1')); // node names compare without case
    await writePodRecord(root, rec('a3')); // no spec.nodeName (a record of an older klet): this node's
    await writePodRecord(root, rec('b1', 'node2'));
    await writePodRecord(root, rec('b2', 'node2'));
    await writePodRecord(root, rec('c1', 'node3'));
    expect((await listPodRecords(root, 'node1')).map((r) => r.pod.metadata?.uid).sort()).toEqual(['a1', 'a2', 'a3']);
    expect((await listPodRecords(root, 'node2')).map((r) => r.pod.metadata?.uid).sort()).toEqual(['a3', 'b1', 'b2']);
    expect([...(await otherNodeRecords(root, 'node1')).entries()].sort()).toEqual([
      ['node2', 2],
      ['node3', 1],
    ]);
    expect(recordOfOtherNode(rec('x', 'node2'), 'NODE2')).toBe(false);
    expect(recordOfOtherNode(rec('x', ''), 'node2')).toBe(false);
  });

  it("writing the pod's record removes every temp file a killed writer left in its dir, and only those", async () => {
    await writePodRecord(root, { pod, source: 'web.yaml', firstSeen: '2026-01-01T00:00:00.000Z' });
    const dir = podDir(root, UID);
    const dead = deadPid();
    const left = [`pod.json.${dead}.0a1b2c3d.tmp`, `sync-state.json.${dead}.deadbeef.tmp`, `etc-hosts.${dead}.00ff00ff.tmp`];
    // pid 1 is alive: a writer still at work keeps its temp file; other files stay.
    const kept = [`sync-state.json.1.12345678.tmp`, 'notes.tmp', 'etc-hosts'];
    for (const n of [...left, ...kept]) fs.writeFileSync(path.join(dir, n), 'x');

    // Other writes leave the dir's temp files alone (no readdir per write)...
    await writeSyncState(root, UID, { containers: {} });
    await writeEtcHosts(root, pod, ['10.0.0.2'], 'cluster.local');
    for (const n of left) expect(fs.existsSync(path.join(dir, n))).toBe(true);

    // ...the next admission's record write sweeps them.
    await writePodRecord(root, { pod, source: 'web.yaml', firstSeen: '2026-01-01T00:00:00.000Z' });
    expect(fs.readdirSync(dir).sort()).toEqual([...kept, 'pod.json', 'sync-state.json'].sort());
  });

  it('the managed /etc/hosts: mode 0644, rewritten in place (the containers bind-mount that inode), the node\'s file for a host-network pod', async () => {
    await writePodRecord(root, { pod, source: 'web.yaml', firstSeen: '2026-01-01T00:00:00.000Z' });
    const file = await writeEtcHosts(root, { ...pod, spec: { ...pod.spec!, subdomain: 'db' } }, ['10.0.0.2'], 'cluster.local');
    expect(file).toBe(path.join(podDir(root, UID), 'etc-hosts'));
    expect(fs.readFileSync(file, 'utf8')).toContain('10.0.0.2\tweb-node1.db.default.svc.cluster.local\tweb-node1\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o644);
    const inode = fs.statSync(file).ino;
    const nodeHosts = path.join(root, 'node-hosts');
    fs.writeFileSync(nodeHosts, '127.0.0.1\tlocalhost\n');
    const hostNet: V1Pod = { ...pod, spec: { ...pod.spec!, hostNetwork: true, hostAliases: [{ ip: '10.1.1.1', hostnames: ['a'] }] } };
    await writeEtcHosts(root, hostNet, [], '', nodeHosts);
    expect(fs.statSync(file).ino).toBe(inode);
    expect(fs.readFileSync(file, 'utf8')).toBe('# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n\n# Entries added by HostAliases.\n10.1.1.1\ta\n');
    await expect(writeEtcHosts(root, hostNet, [], '', path.join(root, 'none'))).rejects.toThrow(`open ${path.join(root, 'none')}: no such file or directory`);
  });

  it("the prober's results file: written whole, no temp file left, a killed prober's temp file swept, a failed write cleans up", async () => {
    await writePodRecord(root, { pod, source: 'web.yaml', firstSeen: '2026-01-01T00:00:00.000Z' });
    const dir = podDir(root, UID);
    const results = { c: { containerId: 'abc', readiness: 'Success' as const } };
    await writeProbeResults(root, UID, results);
    expect(await readProbeResults(root, UID)).toEqual(results);
    expect(fs.readdirSync(dir).sort()).toEqual(['pod.json', 'probes.json']);
    expect(fs.statSync(path.join(dir, 'probes.json')).mode & 0o777).toBe(0o600);

    // A prober killed between its write and its rename: its temp file (the
    // name it really writes, with its pid now gone) goes with the next record write.
    let tmp = '';
    const rename = vi.spyOn(fs, 'renameSync').mockImplementationOnce((from) => {
      tmp = String(from);
      throw Object.assign(new Error('killed'), { code: 'EINTR' });
    });
    const cleanup = vi.spyOn(fs, 'rmSync').mockImplementationOnce(() => undefined); // the kill: no clean-up either
    await expect(writeProbeResults(root, UID, results)).rejects.toThrow();
    rename.mockRestore();
    cleanup.mockRestore();
    expect(path.dirname(tmp)).toBe(dir);
    expect(path.basename(tmp)).toContain(`.${process.pid}.`);
    fs.renameSync(tmp, tmp.replace(`.${process.pid}.`, `.${deadPid()}.`));
    await writePodRecord(root, { pod, source: 'web.yaml', firstSeen: '2026-01-01T00:00:00.000Z' });
    expect(fs.readdirSync(dir).sort()).toEqual(['pod.json', 'probes.json']);

    // A write that cannot land (here: a directory where the file goes) names the file and leaves no temp file.
    fs.rmSync(path.join(dir, 'probes.json'));
    fs.mkdirSync(path.join(dir, 'probes.json', 'x'), { recursive: true });
    await expect(writeProbeResults(root, UID, results)).rejects.toThrow(`cannot write ${path.join(dir, 'probes.json')}`);
    expect(fs.readdirSync(dir).sort()).toEqual(['pod.json', 'probes.json']);
  });

  it('admission keeps the first-seen time and source of the record the caller read, or reads it itself', async () => {
    const first = await admitPod({ rootDir: root }, pod, 'a.yaml');
    // The record the caller read is used as is (runonce reads every record once for all pods).
    const given = { pod, source: 'given.yaml', firstSeen: '2020-01-01T00:00:00.000Z' };
    expect(await admitPod({ rootDir: root }, pod, 'b.yaml', given)).toMatchObject({ source: 'given.yaml', firstSeen: given.firstSeen });
    // Without one, the record on disk decides.
    expect(await admitPod({ rootDir: root }, pod, 'c.yaml')).toMatchObject({ source: 'given.yaml', firstSeen: given.firstSeen });
    // null: the caller knows there is none; a new first-seen time.
    const fresh = await admitPod({ rootDir: root }, pod, 'd.yaml', null);
    expect(fresh.source).toBe('d.yaml');
    expect(Date.parse(fresh.firstSeen)).toBeGreaterThanOrEqual(Date.parse(first.firstSeen));
    expect((await readPodRecord(root, UID))?.source).toBe('d.yaml');
  });
});
