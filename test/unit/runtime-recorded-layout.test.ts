/**
 * recordedLayout: a managed runtime's socket and bridge as its own files
 * (containerd.toml, the CNI conflist) record them, so that a stop given
 * another endpoint acts on the root dir's runtime, never on that endpoint.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CNI_CONFLIST, cniConflist, containerdConfig, managedRuntimeLayout } from '../../src/lib/runtime/containerd-config.js';
import { networkFor, recordedLayout } from '../../src/lib/runtime/containerd.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-recorded-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(layout: ReturnType<typeof managedRuntimeLayout>, conflist?: string): void {
  fs.mkdirSync(layout.cniConfDir, { recursive: true });
  fs.writeFileSync(layout.configFile, containerdConfig(layout));
  fs.writeFileSync(path.join(layout.cniConfDir, CNI_CONFLIST), conflist ?? cniConflist(layout));
}

describe('recordedLayout', () => {
  it('gives the socket and bridge the runtime was started with, not the ones asked for', async () => {
    const startedWith = managedRuntimeLayout({ dir, socketPath: '/tmp/own "odd" dir/containerd.sock', network: networkFor('/srv/a') });
    write(startedWith);
    const asked = managedRuntimeLayout({ dir, socketPath: '/run/containerd/containerd.sock', network: networkFor('/var/lib/klet') });
    const got = await recordedLayout(asked);
    expect(got.socketPath).toBe('/tmp/own "odd" dir/containerd.sock');
    expect(got.network.bridge).toBe(networkFor('/srv/a').bridge);
    expect(got.network.bridge).not.toBe(asked.network.bridge);
    expect(got.configFile).toBe(asked.configFile);
  });

  it('keeps what was asked for when the files are missing or unreadable', async () => {
    const asked = managedRuntimeLayout({ dir, socketPath: '/run/x.sock' });
    expect(await recordedLayout(asked)).toEqual(asked);
    fs.mkdirSync(asked.cniConfDir, { recursive: true });
    fs.writeFileSync(asked.configFile, 'version = 2\n[grpc]\n  address = "unterminated\n');
    fs.writeFileSync(path.join(asked.cniConfDir, CNI_CONFLIST), '{ not json');
    expect(await recordedLayout(asked)).toEqual(asked);
  });

  it('never takes a bridge name klet does not make (a conflist edited by hand)', async () => {
    const layout = managedRuntimeLayout({ dir, socketPath: '/run/x.sock', network: networkFor('/srv/b') });
    const edited = JSON.parse(cniConflist(layout)) as { plugins: { bridge?: string }[] };
    edited.plugins[0]!.bridge = 'docker0';
    write(layout, JSON.stringify(edited));
    expect((await recordedLayout(layout)).network.bridge).toBe(networkFor('/srv/b').bridge);
  });
});
