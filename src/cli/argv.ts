/**
 * The argument parser of klet's oclif-free entries (`klet runonce`, `klet
 * sync`: src/cli/*-entry.ts). bin/run.js hands such a command's arguments to
 * its entry first; the entry parses them here against a table of the oclif
 * command's flags.
 *
 * It accepts only argument lists it reads exactly as oclif does (known
 * flags, --name value, --name=value, -o value, -ovalue, a value not starting
 * with "-"); anything else (--help, an unknown or repeated flag, a stray
 * argument, a bad value, `--`) returns undefined and bin/run.js runs oclif,
 * whose messages are the ones users see for bad input. Each entry's unit test
 * holds its table to the oclif command's flags (names, types, defaults,
 * environment variables) and both parsers to the same answers.
 */
import { DEFAULT_RUNTIME_ENDPOINT } from '../lib/cri/endpoint.js';
import { LOG_LEVELS, type LogLevel } from '../lib/log.js';
import { DEFAULT_ROOT_DIR } from './defaults.js';
import { durationFlagMs } from './duration.js';

export interface ArgvFlagSpec {
  type: 'string' | 'boolean' | 'option' | 'duration' | 'integer';
  multiple?: boolean;
  options?: readonly string[];
  /** As the user would type it (durations and integers are parsed). */
  default?: string | boolean;
  env?: string;
  char?: string;
  /** Integers: the smallest value oclif takes. */
  min?: number;
  /** Durations: 0 is taken too (durationFlag's allowZero). */
  allowZero?: boolean;
  /** Other long names of the flag (oclif's aliases: the kubelet's name for it). */
  aliases?: readonly string[];
}

export type ArgvValue = string | boolean | number | string[];

/** The base command's global flags (src/base-command.ts), which every entry takes. */
export const GLOBAL_FLAGS: Readonly<Record<string, ArgvFlagSpec>> = {
  'root-dir': { type: 'string', env: 'KLET_ROOT_DIR', default: DEFAULT_ROOT_DIR },
  'container-runtime-endpoint': { type: 'string', env: 'CONTAINER_RUNTIME_ENDPOINT', default: DEFAULT_RUNTIME_ENDPOINT },
  'runtime-request-timeout': { type: 'duration', default: '2m' },
  'node-name': { type: 'string' },
  'log-level': { type: 'option', options: LOG_LEVELS, default: 'info' },
};

/** The container manager's flags (src/node-flags.ts cgroupFlags), of `klet sync` and `klet runonce`. */
export const CGROUP_FLAGS: Readonly<Record<string, ArgvFlagSpec>> = {
  'cgroups-per-qos': { type: 'option', options: ['true', 'false'] },
  'cgroup-root': { type: 'string' },
  'cgroup-driver': { type: 'option', options: ['cgroupfs', 'systemd'] },
  'enforce-node-allocatable': { type: 'string' },
};

/** The parsed global flags (durations in milliseconds). */
export interface GlobalArgv {
  'root-dir': string;
  'container-runtime-endpoint': string;
  'runtime-request-timeout': number;
  'node-name'?: string;
  'log-level': LogLevel;
}

/**
 * The flags of ARGV (the words after the command) as oclif would parse them
 * with SPECS, or undefined when this parser does not take the list (then
 * oclif must: it may be an error, or --help).
 */
export function parseArgv(specs: Readonly<Record<string, ArgvFlagSpec>>, argv: readonly string[], env: NodeJS.ProcessEnv): Record<string, ArgvValue> | undefined {
  const given = new Map<string, string[]>();
  const take = (name: string, value: string | undefined): boolean => {
    const spec = specs[name] as ArgvFlagSpec;
    if (value === undefined || value === '' || value.startsWith('-')) return false;
    if (spec.options !== undefined && !spec.options.includes(value)) return false;
    const values = given.get(name) ?? [];
    if (values.length > 0 && !spec.multiple) return false;
    given.set(name, [...values, value]);
    return true;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const typed = a.slice(2, eq === -1 ? undefined : eq);
      const name = Object.hasOwn(specs, typed) ? typed : (Object.keys(specs).find((n) => specs[n]?.aliases?.includes(typed)) ?? typed);
      const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
      if (spec === undefined) return undefined;
      if (spec.type === 'boolean') {
        // oclif refuses --flag=value for a boolean, and takes it repeated.
        if (eq !== -1) return undefined;
        given.set(name, ['true']);
        continue;
      }
      if (!take(name, eq === -1 ? argv[++i] : a.slice(eq + 1))) return undefined;
      continue;
    }
    if (a.length >= 2 && a[0] === '-' && a[1] !== '-') {
      const name = Object.keys(specs).find((n) => specs[n]?.char === a[1]);
      if (name === undefined) return undefined;
      const rest = a.slice(a[2] === '=' ? 3 : 2);
      if (!take(name, a.length === 2 ? argv[++i] : rest)) return undefined;
      continue;
    }
    // A stray argument, `-` or a value oclif would take differently.
    return undefined;
  }
  const flags: Record<string, ArgvValue> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const values = given.get(name);
    // oclif: a flag not given takes its environment variable when that is set and not empty, else its default.
    const fromEnv = spec.env !== undefined && env[spec.env] ? env[spec.env] : undefined;
    const raw = values?.at(-1) ?? fromEnv ?? spec.default;
    if (raw === undefined) continue;
    if (spec.type === 'boolean') {
      flags[name] = raw === 'true' || raw === true;
    } else if (spec.type === 'duration') {
      try {
        flags[name] = durationFlagMs(name, String(raw), spec.allowZero);
      } catch {
        return undefined;
      }
    } else if (spec.type === 'integer') {
      // oclif's Flags.integer: an optional minus and digits, at least min.
      if (!/^-?\d+$/.test(String(raw))) return undefined;
      const n = Number.parseInt(String(raw), 10);
      if (spec.min !== undefined && n < spec.min) return undefined;
      flags[name] = n;
    } else if (spec.multiple) {
      flags[name] = values ?? [String(raw)];
    } else {
      flags[name] = String(raw);
    }
  }
  return flags;
}

/**
 * The global flags that are KubeletConfiguration fields
 * (containerRuntimeEndpoint, runtimeRequestTimeout), when the user gave them
 * (on the command line, or the endpoint's environment variable): only then
 * do they win over a --config file; their defaults do not.
 */
export function givenGlobals(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  flags: { 'container-runtime-endpoint': string; 'runtime-request-timeout': number },
): { 'container-runtime-endpoint'?: string; 'runtime-request-timeout'?: number } {
  const end = argv.indexOf('--');
  const given = (name: string) => argv.some((a, i) => (end === -1 || i < end) && (a === `--${name}` || a.startsWith(`--${name}=`)));
  return {
    ...(given('container-runtime-endpoint') || env.CONTAINER_RUNTIME_ENDPOINT ? { 'container-runtime-endpoint': flags['container-runtime-endpoint'] } : {}),
    ...(given('runtime-request-timeout') ? { 'runtime-request-timeout': flags['runtime-request-timeout'] } : {}),
  };
}
