/**
 * The node's task limit and count, as the kubelet's pidlimit.Stats reads
 * them: the smaller of kernel.pid_max and kernel.threads-max, and
 * /proc/loadavg's count of scheduling entities. Read from a fake /proc.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readMaxPid, readRlimit } from '../../src/lib/stats/node-stats.js';

const dirs: string[] = [];
function fakeProc(files: Record<string, string>): { cgroupRoot: string; proc: string } {
  const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-proc-'));
  dirs.push(proc);
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(proc, f)), { recursive: true });
    fs.writeFileSync(path.join(proc, f), text);
  }
  return { cgroupRoot: '/nonexistent', proc };
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('the node\'s task limit and count', () => {
  it('the limit is the smaller of pid_max and threads-max', async () => {
    expect(await readMaxPid(fakeProc({ 'sys/kernel/pid_max': '4194304\n', 'sys/kernel/threads-max': '192730\n' }))).toBe(192730);
    expect(await readMaxPid(fakeProc({ 'sys/kernel/pid_max': '32768\n', 'sys/kernel/threads-max': '192730\n' }))).toBe(32768);
    expect(await readMaxPid(fakeProc({ 'sys/kernel/pid_max': '32768\n' }))).toBe(32768);
    expect(await readMaxPid(fakeProc({}))).toBeUndefined();
  });

  it('the count is /proc/loadavg\'s total of tasks (threads included), else the processes in /proc', async () => {
    const r = await readRlimit(fakeProc({ loadavg: '0.52 0.58 0.59 3/1234 98765\n', 'sys/kernel/pid_max': '32768\n', '1/stat': '', '2/stat': '' }));
    expect(r).toMatchObject({ maxpid: 32768, curproc: 1234 });
    expect((await readRlimit(fakeProc({ '1/stat': '', '22/stat': '', 'self/x': '' }))).curproc).toBe(2);
  });
});
