/**
 * The systemd cgroup driver's pure parts: the kubelet's slice names
 * (CgroupName.ToSystemd, libcontainer's ExpandSlice), the unit properties of
 * a ResourceConfig (libcontainer's genV1/genV2ResourcesProperties), and the
 * D-Bus wire format of the calls (checked against bytes laid out by hand
 * from the D-Bus specification).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DbusConnection, DbusReader, DbusTimeout, DbusWriter, MESSAGE, decodeMessage, encodeMessage, splitSignature } from '../../src/lib/cm/dbus.js';
import { literalCgroup } from '../../src/lib/cm/manager.js';
import { cpuQuotaPerSecUSec, expandSlice, resourceProperties, sliceProperties, toSystemdPath, unitOf } from '../../src/lib/cm/systemd.js';

describe('slice names (the kubelet\'s ToSystemd)', () => {
  it.each([
    ['/', '/'],
    ['/kubepods', '/kubepods.slice'],
    ['/kubepods/burstable', '/kubepods.slice/kubepods-burstable.slice'],
    ['/kubepods/burstable/pod1234-abcd-5678-efgh', '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678_efgh.slice'],
    ['/kubepods/pod9a8b', '/kubepods.slice/kubepods-pod9a8b.slice'],
    ['/klet-root/kubepods', '/klet_root.slice/klet_root-kubepods.slice'],
  ])('%s → %s', (name, literal) => {
    expect(toSystemdPath(name)).toBe(literal);
    expect(literalCgroup('systemd', name)).toBe(literal);
    expect(literalCgroup('cgroupfs', name)).toBe(name);
  });

  it('ExpandSlice refuses what libcontainer refuses', () => {
    expect(expandSlice('-.slice')).toBe('/');
    for (const bad of ['foo', '.slice', 'a/b.slice', 'a--b.slice', '-a.slice']) expect(() => expandSlice(bad), bad).toThrow(`invalid slice name: ${bad}`);
  });

  it('the unit and its parent slice (updateSystemdCgroupInfo)', () => {
    expect(unitOf('/kubepods.slice')).toEqual({ unit: 'kubepods.slice', parent: '-.slice' });
    expect(unitOf('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podx.slice')).toEqual({ unit: 'kubepods-burstable-podx.slice', parent: 'kubepods-burstable.slice' });
  });
});

describe('unit properties', () => {
  it('CPUQuotaPerSecUSec: quota per second, rounded up to 10 ms; no quota is infinity', () => {
    expect(cpuQuotaPerSecUSec(50_000, 100_000)).toBe(500_000n);
    expect(cpuQuotaPerSecUSec(10_050, 100_000)).toBe(110_000n); // 100.5 ms/s → 110 ms/s
    expect(cpuQuotaPerSecUSec(1_000, 0)).toBe(10_000n); // default period 100 ms
    expect(cpuQuotaPerSecUSec(-1, 100_000)).toBe(2n ** 64n - 1n);
  });

  it('v1: MemoryLimit, CPUShares, the period (systemd ≥ 242), the quota, TasksMax', () => {
    const rc = { memory: 128 * 1024 * 1024, cpuShares: 256, cpuQuota: 50_000, cpuPeriod: 100_000, pidsLimit: -1 };
    expect(resourceProperties(1, rc, 252)).toEqual([
      ['MemoryLimit', { sig: 't', value: 134217728n }],
      ['CPUShares', { sig: 't', value: 256n }],
      ['CPUQuotaPeriodUSec', { sig: 't', value: 100000n }],
      ['CPUQuotaPerSecUSec', { sig: 't', value: 500000n }],
      ['TasksMax', { sig: 't', value: 2n ** 64n - 1n }],
    ]);
    expect(resourceProperties(1, rc, 241).map(([n]) => n)).not.toContain('CPUQuotaPeriodUSec');
    expect(resourceProperties(1, { cpuShares: 2 }, 252)).toEqual([['CPUShares', { sig: 't', value: 2n }]]);
  });

  it('v2: MemoryMax and CPUWeight from the shares', () => {
    expect(resourceProperties(2, { memory: 1024, cpuShares: 1024 }, 252)).toEqual([
      ['MemoryMax', { sig: 't', value: 1024n }],
      ['CPUWeight', { sig: 't', value: 39n }],
    ]);
  });

  it('a new slice: Wants its parent, accounting on, no default dependencies', () => {
    const props = Object.fromEntries(sliceProperties('kubepods.slice', '-.slice'));
    expect(props.Wants).toEqual({ sig: 'as', value: ['-.slice'] });
    expect(props.DefaultDependencies).toEqual({ sig: 'b', value: false });
    expect(props.MemoryAccounting).toEqual({ sig: 'b', value: true });
  });
});

describe('D-Bus wire format', () => {
  it('splits signatures into complete types', () => {
    expect(splitSignature('ssa(sv)a(sa(sv))')).toEqual(['s', 's', 'a(sv)', 'a(sa(sv))']);
    expect(splitSignature('a{sv}uo')).toEqual(['a{sv}', 'u', 'o']);
    expect(() => splitSignature('a(s')).toThrow('bad D-Bus signature');
  });

  it('marshals with the specification\'s alignment', () => {
    const w = new DbusWriter();
    w.writeAll('yta(sv)', [1, 5n, [['A', { sig: 'b', value: true }]]]);
    // y at 0, padding to 8, t at 8, the array's length at 16, padding to 24 (a struct is 8-aligned), s "A" at 24 (length, 'A', NUL),
    // the variant's signature "b" at 30 (length, 'b', NUL), padding to 36, b at 36: the array's elements are 40 − 24 = 16 bytes.
    expect(w.result().toString('hex')).toBe(
      [
        '01', '00000000000000', // y 1, padding
        '0500000000000000', // t 5
        '10000000', '00000000', // the array's byte length 16, padding to 24
        '01000000', '4100', // s "A"
        '016200', // g "b"
        '000000', // padding to 36
        '01000000', // b true
      ].join(''),
    );
    const r = new DbusReader(w.result());
    expect(r.readAll('yta(sv)')).toEqual([1, 5n, [['A', { sig: 'b', value: true }]]]);
  });

  it('a method call round-trips through encode and decode; an incomplete one waits for more bytes', () => {
    const body = ['kubepods.slice', 'replace', [['CPUShares', { sig: 't', value: 1024n }], ['Wants', { sig: 'as', value: ['-.slice'] }]], []];
    const bytes = encodeMessage({ type: MESSAGE.METHOD_CALL, serial: 7, path: '/org/freedesktop/systemd1', interface: 'org.freedesktop.systemd1.Manager', member: 'StartTransientUnit', destination: 'org.freedesktop.systemd1', signature: 'ssa(sv)a(sa(sv))', body });
    expect(bytes.subarray(0, 4).toString('hex')).toBe('6c010001'); // 'l', METHOD_CALL, no flags, version 1
    expect(decodeMessage(bytes.subarray(0, bytes.length - 1))).toBeNull();
    const decoded = decodeMessage(Buffer.concat([bytes, Buffer.from('extra')]));
    expect(decoded?.length).toBe(bytes.length);
    expect(decoded?.message).toMatchObject({ type: 1, serial: 7, member: 'StartTransientUnit', destination: 'org.freedesktop.systemd1', signature: 'ssa(sv)a(sa(sv))', body });
  });
});

describe('a D-Bus connection (a fake peer on a unix socket)', () => {
  /** A peer that authenticates, ignores the first `deaf` pings (as systemd may leave a message unread), answers the rest and every other call but `Never`. */
  async function fakePeer(deaf: number): Promise<{ path: string; pings: () => number; close: () => void }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-dbus-'));
    const sock = path.join(dir, 'bus');
    let pings = 0;
    const server = net.createServer((c) => {
      let authed = false;
      let buf = Buffer.alloc(0);
      c.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        if (!authed) {
          const text = buf.toString('latin1');
          if (text.includes('AUTH EXTERNAL') && !text.includes('BEGIN\r\n')) c.write('OK 0123456789abcdef0123456789abcdef\r\n');
          const begin = text.indexOf('BEGIN\r\n');
          if (begin < 0) return;
          authed = true;
          buf = buf.subarray(begin + 'BEGIN\r\n'.length);
        }
        for (let d = decodeMessage(buf); d; d = decodeMessage(buf)) {
          buf = buf.subarray(d.length);
          const m = d.message;
          if (m.member === 'Ping' && pings++ < deaf) continue;
          if (m.member === 'Never') continue;
          c.write(encodeMessage({ type: MESSAGE.METHOD_RETURN, serial: 1000 + m.serial, replySerial: m.serial, signature: 's', body: [`re:${m.member}`] }));
        }
      });
    });
    await new Promise<void>((r) => server.listen(sock, r));
    return { path: sock, pings: () => pings, close: () => { server.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
  }

  it('pings until the peer answers before the first call; a call without an answer is a DbusTimeout, not a hang', async () => {
    const peer = await fakePeer(3);
    try {
      const conn = await DbusConnection.open(peer.path, false);
      expect(peer.pings()).toBe(4);
      expect(await conn.call({ path: '/x', interface: 'x.Y', member: 'Hello2' })).toEqual(['re:Hello2']);
      await expect(conn.call({ path: '/x', interface: 'x.Y', member: 'Never' }, undefined, 200)).rejects.toThrow(DbusTimeout);
      await expect(conn.call({ path: '/x', interface: 'x.Y', member: 'Never' }, undefined, 200)).rejects.toThrow('D-Bus call x.Y.Never had no answer in 0.2 s');
      conn.close();
      await expect(conn.call({ path: '/x', interface: 'x.Y', member: 'After' })).rejects.toThrow('D-Bus connection closed');
    } finally {
      peer.close();
    }
  });
});
