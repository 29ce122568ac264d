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
