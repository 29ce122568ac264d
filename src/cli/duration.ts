/**
 * Duration flags: a Go-style duration (2m, 30s, 1m30s, 500ms), as the
 * kubelet's flags take them, parsed once to milliseconds; a bad value is an
 * error naming the flag. (The oclif flag type is src/flags.ts durationFlag.)
 */
import { InputError } from '../lib/errors.js';
import { parseDuration } from '../lib/util/duration.js';

/** Milliseconds of a positive duration, or a one-line error naming the flag and the value. */
export function positiveDurationMs(flag: string, value: string): number {
  const ms = parseDuration(value);
  if (ms === null || ms <= 0) throw new InputError(`--${flag} "${value}": not a positive duration (e.g. 5m, 30s)`);
  return ms;
}

/** Milliseconds of a duration that may be zero ("0", "0s": off), or a one-line error naming the flag and the value. */
export function nonNegativeDurationMs(flag: string, value: string): number {
  const ms = parseDuration(value);
  if (ms === null || ms < 0) throw new InputError(`--${flag} "${value}": not a duration (e.g. 3s, 500ms, 0 for none)`);
  return ms;
}

/** A duration flag's value in milliseconds: positive, or with allowZero also zero. */
export function durationFlagMs(flag: string, value: string, allowZero = false): number {
  return allowZero ? nonNegativeDurationMs(flag, value) : positiveDurationMs(flag, value);
}
