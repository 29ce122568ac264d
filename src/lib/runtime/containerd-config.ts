/**
 * Configuration of a klet-managed containerd: a containerd config (version 2
 * for containerd 1.6/1.7, version 3 for 2.x) with its own root, state and
 * socket, the CRI plugin set up for these machines, and a CNI bridge
 * network. Pure functions: the caller runs containerd and writes files.
 */
import path from 'node:path';

/** The sandbox ("pause") image klet builds itself; no registry is needed. */
export const PAUSE_IMAGE = 'localhost/klet/pause:3.10';
/** A small general-purpose image built from busybox-static, for demos and tests. */
export const BUSYBOX_IMAGE = 'localhost/klet/busybox:1.36';

export interface CniNetwork {
  /** Linux bridge name (at most 15 characters). */
  bridge: string;
  /** IPv4 subnet in CIDR form handed out by host-local. */
  subnet: string;
  /** CNI network name, also the key under which host-local keeps its leases. */
  name: string;
}

export const DEFAULT_NETWORK: CniNetwork = { bridge: 'klet0', subnet: '10.88.0.0/16', name: 'klet' };

export interface ManagedRuntimeLayout {
  /** Directory holding everything of this runtime: config, logs, pidfile, data. */
  dir: string;
  /** containerd's gRPC socket path (the CRI endpoint without unix://). */
  socketPath: string;
  configFile: string;
  pidFile: string;
  logFile: string;
  /** containerd `root` (content store, snapshots). */
  rootDir: string;
  /** containerd `state` (runtime state, shim sockets). */
  stateDir: string;
  cniConfDir: string;
  cniDataDir: string;
  cniBinDir: string;
  /** Where built images are cached before import. */
  imageCacheDir: string;
  network: CniNetwork;
  /** runc makes the containers' cgroups as systemd scopes (SystemdCgroup = true): what klet's systemd cgroup driver needs. */
  systemdCgroup: boolean;
}

/**
 * Lay out a managed runtime under `dir`. The state directory lives under
 * /run when `dir` is the system one so that a reboot clears it, as
 * containerd expects; tests pass a temp dir and keep everything inside it.
 */
export function managedRuntimeLayout(opts: {
  dir: string;
  socketPath: string;
  stateDir?: string;
  cniBinDir?: string;
  network?: CniNetwork;
  systemdCgroup?: boolean;
}): ManagedRuntimeLayout {
  const dir = path.resolve(opts.dir);
  return {
    dir,
    socketPath: path.resolve(opts.socketPath),
    configFile: path.join(dir, 'containerd.toml'),
    pidFile: path.join(dir, 'containerd.pid'),
    logFile: path.join(dir, 'containerd.log'),
    rootDir: path.join(dir, 'root'),
    stateDir: opts.stateDir ?? path.join(dir, 'state'),
    cniConfDir: path.join(dir, 'cni', 'net.d'),
    cniDataDir: path.join(dir, 'cni', 'networks'),
    cniBinDir: opts.cniBinDir ?? '/usr/lib/cni',
    imageCacheDir: path.join(dir, 'images'),
    network: opts.network ?? DEFAULT_NETWORK,
    systemdCgroup: opts.systemdCgroup ?? false,
  };
}

function tomlString(s: string): string {
  return JSON.stringify(s);
}

/** A containerd release, as `containerd --version` prints it. */
export interface ContainerdVersion {
  major: number;
  minor: number;
  patch: number;
  /** The version word as printed: `1.6.20~ds1`, `v2.4.2`. */
  text: string;
}

/** The oldest containerd klet configures (CRI v1 and config version 2 as klet writes it). */
export const MIN_CONTAINERD = { major: 1, minor: 6 } as const;

/**
 * The version in `containerd --version` output, or null when there is none:
 * `containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1`
 * (Debian), `containerd github.com/containerd/containerd/v2 v2.4.2 REVISION`
 * (upstream). The version is the word after the package path.
 */
export function parseContainerdVersion(output: string): ContainerdVersion | null {
  const line = output.split('\n').find((l) => l.trim() !== '') ?? '';
  const words = line.trim().split(/\s+/);
  const word = words[0] === 'containerd' && words[1]?.includes('/') ? words[2] : undefined;
  const m = word === undefined ? null : /^v?(\d+)\.(\d+)\.(\d+)/.exec(word);
  if (m === null || word === undefined) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), text: word };
}

/** Whether klet can run this containerd (1.6 or newer). */
export function supportedContainerd(v: ContainerdVersion): boolean {
  return v.major > MIN_CONTAINERD.major || (v.major === MIN_CONTAINERD.major && v.minor >= MIN_CONTAINERD.minor);
}

/**
 * The config version klet writes for a containerd: 3 for 2.x (version 3
 * renamed the CRI plugin's parts; every 2.x reads it, and 2.3+ migrate it to
 * their version 4 in memory), 2 for 1.x (which refuses version 3).
 */
export function configVersionFor(v: ContainerdVersion): 2 | 3 {
  return v.major >= 2 ? 3 : 2;
}

export interface ContainerdConfigOptions {
  /** 2 (containerd 1.x) or 3 (containerd 2.x). Default 2. */
  configVersion?: 2 | 3;
  /** The CRI registry `config_path` (hosts.toml directories); none when absent. */
  registryConfigPath?: string;
}

/** What both config versions share: the top level, with the private root, state and sockets. */
function configHead(layout: ManagedRuntimeLayout, version: 2 | 3): string {
  return `# Written by klet. Changes are overwritten on the next \`klet runtime start\`.
version = ${version}
root = ${tomlString(layout.rootDir)}
state = ${tomlString(layout.stateDir)}
oom_score = 0

[grpc]
  address = ${tomlString(layout.socketPath)}

[ttrpc]
  address = ${tomlString(layout.socketPath + '.ttrpc')}

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""
`;
}

const OOM_COMMENT = `# This machine denies lowering oom_score_adj below 0; the CRI plugin asks
  # for -998 on sandboxes and every sandbox fails without the clamp.`;

/**
 * The containerd config file: version 2 (containerd 1.x, one CRI plugin
 * `io.containerd.grpc.v1.cri`) or version 3 (containerd 2.x, where that
 * plugin was split into `io.containerd.cri.v1.images` (sandbox image,
 * snapshotter, registry), `io.containerd.cri.v1.runtime` (OOM clamp,
 * runtimes, CNI) and `io.containerd.grpc.v1.cri` (the CRI service and its
 * streaming server)). Both say the same thing.
 */
export function containerdConfig(layout: ManagedRuntimeLayout, opts: ContainerdConfigOptions = {}): string {
  return (opts.configVersion ?? 2) === 3 ? containerdConfigV3(layout, opts) : containerdConfigV2(layout, opts);
}

function containerdConfigV2(layout: ManagedRuntimeLayout, opts: ContainerdConfigOptions): string {
  const cri = '[plugins."io.containerd.grpc.v1.cri"';
  const registry =
    opts.registryConfigPath === undefined ? '' : `\n  ${cri}.registry]\n    config_path = ${tomlString(opts.registryConfigPath)}\n`;
  return `${configHead(layout, 2)}
${cri}]
  sandbox_image = ${tomlString(PAUSE_IMAGE)}
  ${OOM_COMMENT}
  restrict_oom_score_adj = true
  # Several private runtimes may run side by side: let each pick a free port.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  max_container_log_line_size = 16384

  ${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    ${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      ${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = ${layout.systemdCgroup}

  ${cri}.cni]
    bin_dir = ${tomlString(layout.cniBinDir)}
    conf_dir = ${tomlString(layout.cniConfDir)}
    max_conf_num = 1
${registry}`;
}

function containerdConfigV3(layout: ManagedRuntimeLayout, opts: ContainerdConfigOptions): string {
  const images = '[plugins."io.containerd.cri.v1.images"';
  const runtime = '[plugins."io.containerd.cri.v1.runtime"';
  const cri = '[plugins."io.containerd.grpc.v1.cri"';
  const registry =
    opts.registryConfigPath === undefined ? '' : `\n  ${images}.registry]\n    config_path = ${tomlString(opts.registryConfigPath)}\n`;
  return `${configHead(layout, 3)}
${images}]
  snapshotter = "overlayfs"

  ${images}.pinned_images]
    sandbox = ${tomlString(PAUSE_IMAGE)}
${registry}
${runtime}]
  ${OOM_COMMENT}
  restrict_oom_score_adj = true
  enable_selinux = false
  max_container_log_line_size = 16384

  ${runtime}.containerd]
    default_runtime_name = "runc"

    ${runtime}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      ${runtime}.containerd.runtimes.runc.options]
        SystemdCgroup = ${layout.systemdCgroup}

  ${runtime}.cni]
    bin_dirs = [${tomlString(layout.cniBinDir)}]
    conf_dir = ${tomlString(layout.cniConfDir)}
    max_conf_num = 1

${cri}]
  # Several private runtimes may run side by side: let each pick a free port.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

/** The conflist's file name in the layout's cniConfDir. */
export const CNI_CONFLIST = '10-klet.conflist';

/** CNI conflist: bridge + host-local IPAM (leases kept in our own dir) + portmap for hostPort. */
export function cniConflist(layout: ManagedRuntimeLayout): string {
  const { network } = layout;
  const conf = {
    cniVersion: '1.0.0',
    name: network.name,
    plugins: [
      {
        type: 'bridge',
        bridge: network.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          dataDir: layout.cniDataDir,
          ranges: [[{ subnet: network.subnet }]],
          routes: [{ dst: '0.0.0.0/0' }],
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
  return JSON.stringify(conf, null, 2) + '\n';
}
