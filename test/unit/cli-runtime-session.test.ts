/**
 * The runtime session of one command run (src/cli/runtime-session.ts): the
 * services' first CRI calls go out together (two lists at once), and must
 * share one connection to the runtime rather than each opening its own.
 */
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CriClient } from '../../src/lib/cri/client.js';
import { RuntimeSession } from '../../src/cli/runtime-session.js';

function session(): RuntimeSession {
  const sock = path.join(os.tmpdir(), `klet-no-runtime-${process.pid}.sock`);
  return new RuntimeSession({
    endpoint: `unix://${sock}`,
    endpointIsDefault: false,
    rootDir: path.join(os.tmpdir(), `klet-session-${process.pid}`),
    runtimeTimeoutMs: 2000,
    nodeName: 'n1',
    signal: () => new AbortController().signal,
    notice: () => undefined,
  });
}

afterEach(() => vi.restoreAllMocks());

describe('RuntimeSession', () => {
  it('concurrent first calls share one CRI client', async () => {
    const connect = vi.spyOn(CriClient, 'connect');
    const s = session();
    const [a, b, c] = await Promise.all([s.cri(), s.cri(), s.cri()]);
    expect(a).toBe(b);
    expect(b).toBe(c);
    expect(connect).toHaveBeenCalledTimes(1);
    s.close();
  });

  it('the services’ deps connect once, on their first calls, however many go out at once', async () => {
    const connect = vi.spyOn(CriClient, 'connect');
    const s = session();
    const deps = await s.deps();
    expect(connect).not.toHaveBeenCalled(); // nothing is asked of the runtime before a service calls it
    const calls = await Promise.allSettled([deps.cri.listPodSandbox({}), deps.cri.listContainers({})]);
    // No runtime at that socket: both fail, and one client was made for both.
    expect(calls.map((c) => c.status)).toEqual(['rejected', 'rejected']);
    expect(connect).toHaveBeenCalledTimes(1);
    s.close();
  });
});
