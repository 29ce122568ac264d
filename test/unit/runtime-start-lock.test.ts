import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lockEndpoint } from '../../src/lib/runtime/containerd.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-lock-'));
  dirs.push(d);
  return d;
}

describe('the runtime start lock (one start per socket)', () => {
  it('is held by one contender at a time, however many start together', async () => {
    const lockDir = tmp();
    let holders = 0;
    let most = 0;
    const contend = async () => {
      const release = await lockEndpoint('/run/x.sock', { timeoutMs: 20_000, lockDir });
      holders++;
      most = Math.max(most, holders);
      await new Promise((r) => setTimeout(r, 5));
      holders--;
      await release();
    };
    await Promise.all(Array.from({ length: 200 }, contend));
    expect(most).toBe(1);
    // Nothing left behind: no lock, no contender's own file.
    expect(fs.readdirSync(lockDir)).toEqual([]);
  });

  it("takes over a dead holder's lock", async () => {
    const lockDir = tmp();
    const first = await lockEndpoint('/run/y.sock', { timeoutMs: 1000, lockDir });
    const [file] = fs.readdirSync(lockDir);
    // A holder that died without releasing: a pid that cannot be alive.
    fs.writeFileSync(path.join(lockDir, file!), '999999999\n/run/y.sock\n');
    const second = await lockEndpoint('/run/y.sock', { timeoutMs: 1000, lockDir });
    expect(fs.readFileSync(path.join(lockDir, file!), 'utf8').split('\n')[0]).toBe(String(process.pid));
    await second();
    await first();
    expect(fs.readdirSync(lockDir)).toEqual([]);
  });

  it('waits for a live holder, then names it when the wait runs out', async () => {
    const lockDir = tmp();
    const release = await lockEndpoint('/run/z.sock', { timeoutMs: 1000, lockDir });
    fs.writeFileSync(path.join(lockDir, fs.readdirSync(lockDir)[0]!), '1\n/run/z.sock\n'); // pid 1 is alive
    await expect(lockEndpoint('/run/z.sock', { timeoutMs: 300, lockDir })).rejects.toThrow(/another klet \(pid 1\) is still starting a runtime on unix:\/\/\/run\/z\.sock/);
    await release();
  });
});
