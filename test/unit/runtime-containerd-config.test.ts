/**
 * The managed containerd's config: version 2 (containerd 1.x, one CRI plugin)
 * and version 3 (containerd 2.x, the CRI plugin split in three) say the same
 * thing — private root, state and sockets, the locally built sandbox image,
 * the OOM clamp this machine needs, the CNI dirs, the cgroup driver — each
 * under the plugin that reads it. And `containerd --version` parsing.
 */
import { describe, expect, it } from 'vitest';
import {
  PAUSE_IMAGE,
  configVersionFor,
  containerdConfig,
  managedRuntimeLayout,
  parseContainerdVersion,
  supportedContainerd,
} from '../../src/lib/runtime/containerd-config.js';
import { runtimePath } from '../../src/lib/runtime/containerd.js';

/** The generated TOML as section -> key -> raw value (enough for what klet writes: tables, one key = value a line). */
function sections(toml: string): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>([['', new Map()]]);
  let current = '';
  for (const raw of toml.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const table = /^\[(.+)\]$/.exec(line);
    if (table) {
      current = table[1] as string;
      expect(out.has(current), `table [${current}] defined twice`).toBe(false);
      out.set(current, new Map());
      continue;
    }
    const kv = /^([A-Za-z_]+) = (.+)$/.exec(line);
    expect(kv, `not a key = value line: ${line}`).not.toBeNull();
    const keys = out.get(current) as Map<string, string>;
    expect(keys.has(kv![1] as string), `${kv![1]} twice in [${current}]`).toBe(false);
    keys.set(kv![1] as string, kv![2] as string);
  }
  return out;
}

function get(s: Map<string, Map<string, string>>, table: string, key: string): string | undefined {
  return s.get(table)?.get(key);
}

const layout = managedRuntimeLayout({ dir: '/srv/klet "x"/containerd', socketPath: '/run/klet-a/containerd.sock' });
const str = (v: string) => JSON.stringify(v);

describe('containerdConfig version 2 (containerd 1.x)', () => {
  const s = sections(containerdConfig(layout, { configVersion: 2 }));
  const cri = 'plugins."io.containerd.grpc.v1.cri"';

  it('is the default, and keeps the private root, state and sockets at the top level', () => {
    expect(containerdConfig(layout)).toBe(containerdConfig(layout, { configVersion: 2 }));
    expect(get(s, '', 'version')).toBe('2');
    expect(get(s, '', 'root')).toBe(str('/srv/klet "x"/containerd/root'));
    expect(get(s, '', 'state')).toBe(str('/srv/klet "x"/containerd/state'));
    expect(get(s, 'grpc', 'address')).toBe(str('/run/klet-a/containerd.sock'));
    expect(get(s, 'ttrpc', 'address')).toBe(str('/run/klet-a/containerd.sock.ttrpc'));
  });

  it('puts everything of CRI under io.containerd.grpc.v1.cri', () => {
    expect(get(s, cri, 'sandbox_image')).toBe(str(PAUSE_IMAGE));
    expect(get(s, cri, 'restrict_oom_score_adj')).toBe('true');
    expect(get(s, cri, 'stream_server_port')).toBe('"0"');
    expect(get(s, `${cri}.containerd`, 'snapshotter')).toBe('"overlayfs"');
    expect(get(s, `${cri}.containerd.runtimes.runc`, 'runtime_type')).toBe('"io.containerd.runc.v2"');
    expect(get(s, `${cri}.containerd.runtimes.runc.options`, 'SystemdCgroup')).toBe('false');
    expect(get(s, `${cri}.cni`, 'bin_dir')).toBe(str('/usr/lib/cni'));
    expect(get(s, `${cri}.cni`, 'conf_dir')).toBe(str(layout.cniConfDir));
    expect([...s.keys()].filter((t) => t.includes('io.containerd.cri.v1'))).toEqual([]);
    expect(s.has(`${cri}.registry`)).toBe(false);
  });

  it('sets SystemdCgroup for the systemd driver, and a registry config_path when given', () => {
    const sd = managedRuntimeLayout({ dir: '/d', socketPath: '/d/c.sock', systemdCgroup: true });
    const t = sections(containerdConfig(sd, { configVersion: 2, registryConfigPath: '/d/certs.d' }));
    expect(get(t, `${cri}.containerd.runtimes.runc.options`, 'SystemdCgroup')).toBe('true');
    expect(get(t, `${cri}.registry`, 'config_path')).toBe(str('/d/certs.d'));
  });
});

describe('containerdConfig version 3 (containerd 2.x)', () => {
  const s = sections(containerdConfig(layout, { configVersion: 3 }));
  const images = 'plugins."io.containerd.cri.v1.images"';
  const runtime = 'plugins."io.containerd.cri.v1.runtime"';
  const cri = 'plugins."io.containerd.grpc.v1.cri"';

  it('keeps the same top level', () => {
    expect(get(s, '', 'version')).toBe('3');
    expect(get(s, '', 'root')).toBe(str('/srv/klet "x"/containerd/root'));
    expect(get(s, '', 'state')).toBe(str('/srv/klet "x"/containerd/state'));
    expect(get(s, 'grpc', 'address')).toBe(str('/run/klet-a/containerd.sock'));
    expect(get(s, 'ttrpc', 'address')).toBe(str('/run/klet-a/containerd.sock.ttrpc'));
  });

  it('puts the sandbox image and snapshotter under cri.v1.images (sandbox_image is gone: a pinned image)', () => {
    expect(get(s, `${images}.pinned_images`, 'sandbox')).toBe(str(PAUSE_IMAGE));
    expect(get(s, images, 'snapshotter')).toBe('"overlayfs"');
    expect(s.has(`${images}.registry`)).toBe(false);
  });

  it('puts the OOM clamp, the runc runtime and CNI under cri.v1.runtime', () => {
    expect(get(s, runtime, 'restrict_oom_score_adj')).toBe('true');
    expect(get(s, runtime, 'max_container_log_line_size')).toBe('16384');
    expect(get(s, `${runtime}.containerd`, 'default_runtime_name')).toBe('"runc"');
    expect(get(s, `${runtime}.containerd.runtimes.runc`, 'runtime_type')).toBe('"io.containerd.runc.v2"');
    expect(get(s, `${runtime}.containerd.runtimes.runc.options`, 'SystemdCgroup')).toBe('false');
    // bin_dir became a list.
    expect(get(s, `${runtime}.cni`, 'bin_dirs')).toBe(`[${str('/usr/lib/cni')}]`);
    expect(get(s, `${runtime}.cni`, 'conf_dir')).toBe(str(layout.cniConfDir));
    expect(get(s, `${runtime}.cni`, 'max_conf_num')).toBe('1');
  });

  it('leaves only the streaming server under grpc.v1.cri', () => {
    expect([...(s.get(cri)?.keys() ?? [])].sort()).toEqual(['stream_server_address', 'stream_server_port']);
    expect([...s.keys()].filter((t) => t.startsWith(`${cri}.`))).toEqual([]);
    expect(get(s, cri, 'stream_server_port')).toBe('"0"');
  });

  it('sets SystemdCgroup for the systemd driver, and a registry config_path when given', () => {
    const sd = managedRuntimeLayout({ dir: '/d', socketPath: '/d/c.sock', systemdCgroup: true });
    const t = sections(containerdConfig(sd, { configVersion: 3, registryConfigPath: '/d/certs.d' }));
    expect(get(t, `${runtime}.containerd.runtimes.runc.options`, 'SystemdCgroup')).toBe('true');
    expect(get(t, `${images}.registry`, 'config_path')).toBe(str('/d/certs.d'));
  });
});

describe('containerd --version', () => {
  it.each([
    ['containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1\n', [1, 6, 20], '1.6.20~ds1', 2],
    ['containerd github.com/containerd/containerd v1.7.24 88bf19b2105c8b17560993bee28a01ddc2f97182\n', [1, 7, 24], 'v1.7.24', 2],
    ['containerd github.com/containerd/containerd/v2 v2.4.2 \n', [2, 4, 2], 'v2.4.2', 3],
    ['containerd github.com/containerd/containerd/v2 2.4.2+unknown \n', [2, 4, 2], '2.4.2+unknown', 3],
  ] as const)('%j', (out, [major, minor, patch], text, configVersion) => {
    const v = parseContainerdVersion(out);
    expect(v).toEqual({ major, minor, patch, text });
    expect(supportedContainerd(v!)).toBe(true);
    expect(configVersionFor(v!)).toBe(configVersion);
  });

  it('refuses what is no containerd version, and calls 1.5 unsupported', () => {
    for (const out of ['', 'runc version 1.1.5\n', 'containerd 1.6.20\n', 'containerd github.com/containerd/containerd dev\n']) {
      expect(parseContainerdVersion(out), out).toBeNull();
    }
    expect(supportedContainerd(parseContainerdVersion('containerd github.com/containerd/containerd v1.5.9 1407cab5\n')!)).toBe(false);
  });
});

describe('runtimePath', () => {
  it("puts containerd's own directory first, once", () => {
    expect(runtimePath('/opt/cd/containerd', '/usr/bin:/opt/cd:/bin')).toBe('/opt/cd:/usr/bin:/bin');
    expect(runtimePath('/usr/bin/containerd', '')).toBe('/usr/bin');
  });
});
