/**
 * The container manager's settings (the kubelet's cgroupsPerQOS, cgroupRoot,
 * cgroupDriver, enforceNodeAllocatable, kubeReserved, systemReserved),
 * checked as the kubelet's ValidateKubeletConfiguration checks them. The
 * raw values come from flags or a KubeletConfiguration; an error names each
 * value it is about as the caller describes it (its flag, or the file's line
 * and field), then says the kubelet's message.
 */
import { InputError } from '../errors.js';
import { NO_RESERVATION, type Reservation, parseReservation } from '../node/config.js';

export interface RawCgroupSettings {
  cgroupsPerQOS: boolean;
  /** Default "/" (with cgroupsPerQOS). */
  cgroupRoot?: string;
  cgroupDriver?: string;
  /** The enforcement levels; default ["pods"]. */
  enforceNodeAllocatable?: readonly string[];
  kubeReserved?: string;
  systemReserved?: string;
  /** pids.max of each pod cgroup when > 0 (podPidsLimit). */
  podPidsLimit?: number;
  /** How an error names a field's value (where it came from: a flag, file:line and the field); default: the field path. */
  describe?: (field: CgroupField) => string;
}

/** The KubeletConfiguration fields of these settings. */
export type CgroupField = 'cgroupsPerQOS' | 'cgroupRoot' | 'cgroupDriver' | 'enforceNodeAllocatable' | 'kubeReserved' | 'systemReserved';

export type CgroupDriver = 'cgroupfs' | 'systemd';

export interface CgroupSettings {
  /** How cgroups are made: directly in cgroupfs, or as systemd slices (names and paths as the kubelet's drivers give them). */
  driver: CgroupDriver;
  /** How errors about the driver name it. */
  driverName: string;
  cgroupRoot: string;
  /** How errors about cgroupRoot name it (RawCgroupSettings.describe). */
  cgroupRootName: string;
  /** `pods` is enforced: kubepods gets capacity less the reservations. */
  enforcePods: boolean;
  kubeReserved: Reservation;
  systemReserved: Reservation;
  /** pids.max of each pod cgroup; ≤ 0: none. */
  podPidsLimit: number;
}

const LEVELS = ['pods', 'system-reserved', 'system-reserved-compressible', 'kube-reserved', 'kube-reserved-compressible', 'none'];

/** The settings, or null without cgroupsPerQOS (pods get the runtime's default cgroup parent). */
export function cgroupSettings(raw: RawCgroupSettings): CgroupSettings | null {
  const name = raw.describe ?? ((f: CgroupField) => f);
  const driver = raw.cgroupDriver ?? 'cgroupfs';
  if (driver !== 'cgroupfs' && driver !== 'systemd') throw new InputError(`${name('cgroupDriver')} ${driver}: invalid configuration: cgroupDriver (--cgroup-driver) must be cgroupfs or systemd`);
  const levels = (raw.enforceNodeAllocatable ?? ['pods']).map((l) => l.trim()).filter((l) => l !== '');
  const seen = new Set<string>();
  for (const l of levels) {
    const enforce = `${name('enforceNodeAllocatable')} ${levels.join(',')}`;
    if (seen.has(l)) throw new InputError(`${enforce}: invalid configuration: duplicated enforcements "${l}" in enforceNodeAllocatable (--enforce-node-allocatable)`);
    seen.add(l);
    if (!LEVELS.includes(l)) {
      throw new InputError(`${enforce}: invalid configuration: option "${l}" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are ${LEVELS.map((x) => `"${x}"`).join(', ')}`);
    }
    if (l === 'none') {
      if (levels.length > 1) throw new InputError(`${enforce}: invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified`);
      continue;
    }
    if (l !== 'pods') throw new InputError(`${enforce}: "${l}" is not supported by klet yet (it needs --${l.replace('-compressible', '')}-cgroup); klet enforces "pods" or "none"`);
    if (!raw.cgroupsPerQOS) {
      throw new InputError(`${name('cgroupsPerQOS')} false, ${enforce}: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "${l}" contained in enforceNodeAllocatable (--enforce-node-allocatable)`);
    }
  }
  if (!raw.cgroupsPerQOS) return null;
  const cgroupRoot = raw.cgroupRoot === undefined || raw.cgroupRoot === '' ? '/' : raw.cgroupRoot;
  if (!cgroupRoot.startsWith('/') || cgroupRoot.split('/').some((s) => s === '..' || s === '.')) {
    throw new InputError(`${name('cgroupRoot')} ${cgroupRoot}: must be an absolute cgroupfs path (e.g. / or /klet)`);
  }
  const reservation = (field: 'kubeReserved' | 'systemReserved', text: string | undefined): Reservation => {
    try {
      return text === undefined ? { ...NO_RESERVATION } : parseReservation(text);
    } catch (err) {
      throw new InputError(`${name(field)} ${text}: ${(err as Error).message}`);
    }
  };
  return {
    driver,
    driverName: name('cgroupDriver'),
    cgroupRoot,
    cgroupRootName: name('cgroupRoot'),
    enforcePods: levels.includes('pods'),
    kubeReserved: reservation('kubeReserved', raw.kubeReserved),
    systemReserved: reservation('systemReserved', raw.systemReserved),
    podPidsLimit: raw.podPidsLimit ?? -1,
  };
}
