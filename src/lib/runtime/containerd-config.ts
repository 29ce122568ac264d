/**
 * Configuration of a klet-managed containerd: a version-2 containerd config
 * with its own root, state and socket, the CRI plugin set up for these
 * machines, and a CNI bridge network. Pure functions: the caller writes files.
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

/** The containerd version-2 config file. */
export function containerdConfig(layout: ManagedRuntimeLayout): string {
  const cri = '[plugins."io.containerd.grpc.v1.cri"]';
  return `# Written by klet. Changes are overwritten on the next \`klet runtime start\`.
version = 2
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

${cri}
  sandbox_image = ${tomlString(PAUSE_IMAGE)}
  # This machine denies lowering oom_score_adj below 0; the CRI plugin asks
  # for -998 on sandboxes and every sandbox fails without the clamp.
  restrict_oom_score_adj = true
  # Several private runtimes may run side by side: let each pick a free port.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  max_container_log_line_size = 16384

  ${cri.slice(0, -1)}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    ${cri.slice(0, -1)}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      ${cri.slice(0, -1)}.containerd.runtimes.runc.options]
        SystemdCgroup = ${layout.systemdCgroup}

  ${cri.slice(0, -1)}.cni]
    bin_dir = ${tomlString(layout.cniBinDir)}
    conf_dir = ${tomlString(layout.cniConfDir)}
    max_conf_num = 1
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
