/**
 * `klet sync` has two parsers: oclif's (the command class, which also renders
 * --help and every usage error) and the oclif-free entry's
 * (src/cli/sync-entry.ts, which bin/run.js tries first). These tests hold them
 * to the same flags and the same answers: whatever the entry takes, oclif
 * parses to the same values; whatever oclif refuses, the entry leaves to oclif.
 */
import { describe, expect, it } from 'vitest';
import Sync from '../../src/commands/sync.js';
import { SYNC_FLAGS, parseSyncArgv } from '../../src/cli/sync-entry.js';
import { type SyncFlags, givenValues } from '../../src/cli/sync.js';
import { buildKubeletConfig } from '../../src/lib/kubeletconfig/index.js';
import { commonShapes, entryParity, parsersAgree } from '../helpers/entry-parity.js';

const { oclifFlags, both } = entryParity(Sync, parseSyncArgv);

describe('the sync entry declares the oclif command’s flags', () => {
  it('the same names, global, registration and hidden flags included', () => {
    expect(Object.keys(SYNC_FLAGS).sort()).toEqual(Object.keys(oclifFlags).sort());
  });

  it.each(Object.keys(SYNC_FLAGS))('--%s: same type, char, env, options, multiple and minimum', (name) => {
    const spec = SYNC_FLAGS[name]!;
    const flag = oclifFlags[name]!;
    // Duration flags are oclif custom option flags with a parse function (src/flags.ts durationFlag);
    // integer flags are Flags.integer (a custom flag whose parse checks min).
    const type =
      flag.type === 'boolean'
        ? 'boolean'
        : flag.options !== undefined
          ? 'option'
          : typeof flag.parse === 'function' && 'defaultHelp' in flag
            ? 'duration'
            : typeof flag.default === 'number' || typeof flag.min === 'number'
              ? 'integer'
              : 'string';
    expect(spec.type).toBe(type);
    expect(spec.char).toBe(flag.char);
    expect(spec.env).toBe(flag.env);
    expect(spec.options).toEqual(flag.options);
    expect(spec.multiple === true).toBe(flag.multiple === true);
    expect(spec.aliases ?? []).toEqual(flag.aliases ?? []);
    expect(spec.min).toBe(flag.min);
    expect(flag.allowNo === true).toBe(false); // the entry takes no --no-FLAG
  });

  it('the same defaults (no flags given, no environment); the configuration fields\' defaults are lib/kubeletconfig\'s', async () => {
    const { entry, oclif } = await both([]);
    expect(oclif.error).toBeUndefined();
    expect(entry).toEqual(oclif.flags);
    expect(entry).toMatchObject({ 'root-dir': '/var/lib/klet', 'runtime-request-timeout': 120_000, tui: false, 'print-config': false });
    // A flag not given leaves its field to --config, then to the default: the parsers give it no value.
    for (const flag of ['file-check-frequency', 'sync-frequency', 'pleg-relist-period', 'max-pods', 'max-parallel-syncs', 'address', 'crash-loop-backoff-max']) {
      expect(entry, flag).not.toHaveProperty(flag);
    }
    const given = givenValues(entry as unknown as SyncFlags, {});
    // The global flags' defaults are no values given: a --config file's containerRuntimeEndpoint must win over them.
    expect(given).toEqual({});
    const { config } = buildKubeletConfig({ given, nodeName: 'node-a' });
    expect(config).toMatchObject({
      fileCheckFrequency: 20_000,
      syncFrequency: 60_000,
      maxPods: 110,
      address: '0.0.0.0',
      flags: { plegRelistPeriod: 1000, maxParallelSyncs: 8, crashLoopBackOff: { max: 300_000 } },
    });
  });
});

/** Argument lists users, kubeadm-style units and scripts pass: the entry must take every one, as oclif does. */
const TAKEN: string[][] = [
  ['--manifest-dir', '/etc/kubernetes/manifests'],
  ['--manifest-dir=/etc/kubernetes/manifests', '--kubeconfig', '/etc/kubernetes/kubelet.conf'],
  ['--pod-manifest-path', '/etc/kubernetes/manifests', '--kubeconfig', '/etc/kubernetes/kubelet.conf'],
  ['--manifest-dir', 'm', '--root-dir', '/tmp/k', '--container-runtime-endpoint', 'unix:///tmp/k/containerd.sock', '--node-name', 'Node-A'],
  ['--manifest-url', 'https://config.example/node1.yaml', '--manifest-url-header', 'Authorization: Bearer x', '--manifest-url-header', 'X-A: b'],
  ['--listen', '127.0.0.1:10250', '--auth-token-file', '/etc/klet/token'],
  ['--manifest-dir', 'm', '--pleg-relist-period', '500ms', '--file-check-frequency=5s', '--sync-frequency', '30s', '--http-check-frequency', '1m'],
  ['--manifest-dir', 'm', '--max-parallel-syncs', '2', '--max-pods=250'],
  ['--manifest-dir', 'm', '--max-parallel-syncs', '08'],
  ['--kubeconfig', 'k', '--node-labels', 'a=b,c=d', '--register-with-taints', 'k=v:NoSchedule', '--kube-reserved', 'cpu=100m', '--system-reserved=memory=1Gi', '--node-ip', '10.0.0.5'],
  ['--bootstrap-kubeconfig', '/var/lib/klet/bootstrap-kubelet.conf', '--kubeconfig', '/var/lib/klet/kubelet.conf'],
  ['--manifest-dir', 'm', '--tui', '--log-level', 'debug'],
  ['--manifest-dir', 'm', '--crash-loop-backoff-initial', '100ms', '--crash-loop-backoff-max', '1s', '--crash-loop-backoff-reset', '5s'],
  ['--log-level', 'warn', '--manifest-dir', 'm', '--root-dir', '/tmp/k'],
  ['--config', '/var/lib/kubelet/config.yaml', '--port', '10251'],
  ['--config=/var/lib/kubelet/config.yaml', '--print-config'],
  ['--kubeconfig', 'k', '--cluster-dns', '10.96.0.10', '--cluster-dns=10.96.0.11', '--cluster-domain', 'cluster.local', '--resolv-conf', '/run/systemd/resolve/resolv.conf'],
  ['--kubeconfig', 'k', '--rotate-certificates=true', '--rotate-server-certificates=false'],
];

const COMMON = commonShapes('tui');

/** Argument lists oclif refuses (usage errors, --help): the entry must leave them all to oclif; the common ones and this command's own. */
const REFUSED: string[][] = [
  ...COMMON.refused,
  ['--pleg-relist-period', '0s'],
  ['--sync-frequency', '5'],
  ['--max-parallel-syncs', '0'],
  ['--max-parallel-syncs', 'many'],
  ['--max-parallel-syncs', '1.5'],
  ['--max-pods=-3'],
  ['--constructor', 'x'],
  ['-o', 'json'],
];

describe('the two sync parsers agree', () => {
  parsersAgree(both, { taken: TAKEN, left: COMMON.left, refused: REFUSED });
});
