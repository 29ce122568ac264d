/**
 * The systemd cgroup driver (--cgroup-driver systemd), as the kubelet drives
 * it through runc's libcontainer: cgroup names become slices
 * (`/kubepods/burstable/pod<uid>` → kubepods-burstable-pod<uid>.slice, under
 * /kubepods.slice/kubepods-burstable.slice/ in every hierarchy), created as
 * transient units with the settings as unit properties, stopped when the
 * cgroup goes. The names are pure functions; `Systemd` is the D-Bus side.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DbusConnection, DbusError, type DbusMessage, type DbusValue, type Variant } from './dbus.js';
import type { CgroupVersion } from './cgroup-files.js';
import type { ResourceConfig } from './resource-config.js';

/**
 * A cgroupfs-form name in the systemd driver's literal (cgroupfs path) form,
 * the kubelet's CgroupName.ToSystemd: each component's "-" becomes "_", the
 * components are joined by "-" into one slice name, and the slice is expanded
 * into the path of its parents. "/" stays "/".
 */
export function toSystemdPath(cgroupfsName: string): string {
  const parts = cgroupfsName.split('/').filter((p) => p !== '');
  if (parts.length === 0) return '/';
  return expandSlice(parts.map((p) => p.replaceAll('-', '_')).join('-') + '.slice');
}

/** libcontainer's ExpandSlice: a-b-c.slice → /a.slice/a-b.slice/a-b-c.slice. */
export function expandSlice(slice: string): string {
  if (!slice.endsWith('.slice') || slice.length <= '.slice'.length || slice.includes('/')) throw new Error(`invalid slice name: ${slice}`);
  const name = slice.slice(0, -'.slice'.length);
  if (name === '-') return '/';
  let out = '';
  let prefix = '';
  for (const component of name.split('-')) {
    if (component === '') throw new Error(`invalid slice name: ${slice}`);
    out += `/${prefix}${component}.slice`;
    prefix += `${component}-`;
  }
  return out;
}

/** The unit of a literal systemd path and the slice it sits in (the kubelet's updateSystemdCgroupInfo). */
export function unitOf(literal: string): { unit: string; parent: string } {
  const dir = path.posix.dirname(literal);
  return { unit: path.posix.basename(literal), parent: dir === '/' ? '-.slice' : path.posix.basename(dir) };
}

/** µs per second of CPU time for a CFS quota (libcontainer's addCpuQuota: rounded up to 10 ms, systemd's 1 %). */
export function cpuQuotaPerSecUSec(quota: number, period: number): bigint {
  if (quota <= 0) return 2n ** 64n - 1n; // USEC_INFINITY: no quota
  let perSec = BigInt(Math.floor((quota * 1_000_000) / (period || 100_000)));
  if (perSec % 10_000n !== 0n) perSec = (perSec / 10_000n + 1n) * 10_000n;
  return perSec;
}

export type UnitProperty = [string, Variant];

const u64 = (value: number | bigint): Variant => ({ sig: 't', value: BigInt.asUintN(64, BigInt(value)) });

/**
 * The unit properties of a ResourceConfig (libcontainer's
 * genV1ResourcesProperties / genV2ResourcesProperties for what the kubelet
 * sets): memory limit, CPU shares or weight, CFS quota and period, tasks max.
 */
export function resourceProperties(version: CgroupVersion, rc: ResourceConfig, systemdVersion: number): UnitProperty[] {
  const out: UnitProperty[] = [];
  if (rc.memory !== undefined && rc.memory !== 0) out.push([version === 1 ? 'MemoryLimit' : 'MemoryMax', u64(rc.memory < 0 ? -1 : rc.memory)]);
  if (rc.cpuShares !== undefined && rc.cpuShares !== 0) {
    if (version === 1) out.push(['CPUShares', u64(rc.cpuShares)]);
    else out.push(['CPUWeight', u64(rc.cpuShares >= 262144 ? 10000 : 1 + Math.floor(((rc.cpuShares - 2) * 9999) / 262142))]);
  }
  const quota = rc.cpuQuota ?? 0;
  const period = rc.cpuPeriod ?? 0;
  // systemd has CPUQuotaPeriodUSec since v242 (libcontainer leaves it to the cgroup files before).
  if (period !== 0 && systemdVersion >= 242) out.push(['CPUQuotaPeriodUSec', u64(period)]);
  if (quota !== 0 || period !== 0) out.push(['CPUQuotaPerSecUSec', u64(cpuQuotaPerSecUSec(quota, period))]);
  if (rc.pidsLimit !== undefined && rc.pidsLimit !== 0) out.push(['TasksMax', u64(rc.pidsLimit < 0 ? -1 : rc.pidsLimit)]);
  return out;
}

/** What a new slice always gets (libcontainer's Apply for a slice, pid -1). */
export function sliceProperties(unit: string, parent: string): UnitProperty[] {
  return [
    ['Description', { sig: 's', value: `libcontainer container ${unit}` }],
    ['Wants', { sig: 'as', value: [parent] }],
    ['MemoryAccounting', { sig: 'b', value: true }],
    ['CPUAccounting', { sig: 'b', value: true }],
    ['BlockIOAccounting', { sig: 'b', value: true }],
    ['TasksAccounting', { sig: 'b', value: true }],
    ['DefaultDependencies', { sig: 'b', value: false }],
  ];
}

const SYSTEMD = { destination: 'org.freedesktop.systemd1', path: '/org/freedesktop/systemd1', interface: 'org.freedesktop.systemd1.Manager' };
const SYSTEM_BUS = '/run/dbus/system_bus_socket';
const PRIVATE = '/run/systemd/private';
/** How long a job may take (libcontainer's 30 s). */
const JOB_TIMEOUT_MS = 30_000;

/** The host runs systemd as its init (sd_booted: /run/systemd/system exists). */
export function systemdBooted(): boolean {
  return fs.existsSync('/run/systemd/system');
}

/** systemd's Manager over D-Bus: transient slices, their properties, stopping them. */
export class Systemd {
  /** Jobs finished (JobRemoved seen) whose caller may not have asked yet: path → result. */
  private readonly finished = new Map<string, string>();
  private readonly waiting = new Map<string, (result: string) => void>();

  private constructor(
    private readonly conn: DbusConnection,
    /** systemd's version (e.g. 252). */
    readonly version: number,
  ) {
    conn.onSignal = (m) => this.onSignal(m);
  }

  /** The system bus when a bus daemon runs, else systemd's private socket (root only), as libcontainer connects. */
  static async connect(signal?: AbortSignal): Promise<Systemd> {
    let conn: DbusConnection;
    try {
      conn = await DbusConnection.open(SYSTEM_BUS, true, signal);
    } catch (busErr) {
      try {
        conn = await DbusConnection.open(PRIVATE, false, signal);
      } catch (err) {
        throw new Error(`cannot reach systemd over D-Bus (${SYSTEM_BUS}: ${(busErr as Error).message}; ${PRIVATE}: ${(err as Error).message})`, { cause: err });
      }
    }
    try {
      if (conn.isBus) {
        await conn.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'AddMatch', signature: 's', body: ["type='signal',sender='org.freedesktop.systemd1',interface='org.freedesktop.systemd1.Manager',member='JobRemoved'"] });
      }
      await conn.call({ ...SYSTEMD, member: 'Subscribe' });
      const [v] = await conn.call({ ...SYSTEMD, path: '/org/freedesktop/systemd1', interface: 'org.freedesktop.DBus.Properties', member: 'Get', signature: 'ss', body: ['org.freedesktop.systemd1.Manager', 'Version'] });
      const version = Number(/\d+/.exec(String((v as Variant).value))?.[0] ?? 0);
      return new Systemd(conn, version);
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  /** Start a transient slice; one that exists already is left as it is (libcontainer's ignoreExist for slices). */
  async startSlice(unit: string, props: UnitProperty[], signal?: AbortSignal): Promise<void> {
    let job: string;
    try {
      [job] = (await this.conn.call({ ...SYSTEMD, member: 'StartTransientUnit', signature: 'ssa(sv)a(sa(sv))', body: [unit, 'replace', props as DbusValue[], []] }, signal)) as [string];
    } catch (err) {
      if (err instanceof DbusError && err.dbusName === 'org.freedesktop.systemd1.UnitExists') return;
      throw new Error(`systemd cannot start ${unit}: ${(err as Error).message}`, { cause: err });
    }
    const result = await this.job(job, signal);
    if (result !== 'done') {
      await this.resetFailed(unit);
      throw new Error(`error creating systemd unit \`${unit}\`: got \`${result}\``);
    }
  }

  async setProperties(unit: string, props: UnitProperty[], signal?: AbortSignal): Promise<void> {
    if (props.length === 0) return;
    try {
      await this.conn.call({ ...SYSTEMD, member: 'SetUnitProperties', signature: 'sba(sv)', body: [unit, true, props as DbusValue[]] }, signal);
    } catch (err) {
      throw new Error(`systemd cannot set the properties of ${unit}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Stop a unit and wait for it; a unit systemd does not know is already stopped. */
  async stopUnit(unit: string, signal?: AbortSignal): Promise<void> {
    let job: string | undefined;
    try {
      [job] = (await this.conn.call({ ...SYSTEMD, member: 'StopUnit', signature: 'ss', body: [unit, 'replace'] }, signal)) as [string];
    } catch (err) {
      if (!(err instanceof DbusError && err.dbusName === 'org.freedesktop.systemd1.NoSuchUnit')) throw new Error(`systemd cannot stop ${unit}: ${(err as Error).message}`, { cause: err });
    }
    if (job !== undefined) await this.job(job, signal);
    await this.resetFailed(unit);
  }

  close(): void {
    this.conn.close();
  }

  private async resetFailed(unit: string): Promise<void> {
    await this.conn.call({ ...SYSTEMD, member: 'ResetFailedUnit', signature: 's', body: [unit] }).catch(() => undefined);
  }

  /** The result of a job ("done", "failed", …) once systemd has removed it. */
  private job(job: string, signal?: AbortSignal): Promise<string> {
    const early = this.finished.get(job);
    if (early !== undefined) {
      this.finished.delete(job);
      return Promise.resolve(early);
    }
    return this.conn.hold(
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.waiting.delete(job);
          reject(new Error(`timed out after ${JOB_TIMEOUT_MS / 1000} s waiting for systemd job ${job}`));
        }, JOB_TIMEOUT_MS);
        this.waiting.set(job, (result) => {
          clearTimeout(timer);
          resolve(result);
        });
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          this.waiting.delete(job);
          reject(signal.reason);
        }, { once: true });
      }),
    );
  }

  private onSignal(m: DbusMessage): void {
    if (m.member !== 'JobRemoved' || m.interface !== SYSTEMD.interface) return;
    const [, job, , result] = m.body as [number, string, string, string];
    const waiter = this.waiting.get(job);
    if (waiter) {
      this.waiting.delete(job);
      waiter(result);
      return;
    }
    // The signal may come before the call's reply has been handled; keep a few.
    this.finished.set(job, result);
    if (this.finished.size > 256) this.finished.delete(this.finished.keys().next().value!);
  }
}
