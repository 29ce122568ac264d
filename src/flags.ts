/**
 * Flag types shared by the commands. Every duration flag is a durationFlag:
 * a Go-style duration (2m, 30s, 1m30s, 500ms), as the kubelet's flags take
 * them, parsed once to milliseconds; a bad value is a usage error naming the flag.
 */
import { Flags } from '@oclif/core';
import { durationFlagMs } from './cli/duration.js';

export interface DurationFlagOptions {
  summary: string;
  /** The default as the user would type it (shown in --help). */
  default: string;
  hidden?: boolean;
  helpGroup?: string;
  /** Take 0 (off) as well. */
  allowZero?: boolean;
}

/** A positive (or with allowZero, non-negative) duration flag, in milliseconds. */
export function durationFlag(opts: DurationFlagOptions) {
  return Flags.custom<number>({
    summary: opts.summary,
    hidden: opts.hidden,
    helpGroup: opts.helpGroup,
    helpValue: '<value>',
    default: async (ctx) => durationFlagMs(ctx.options.name, opts.default, opts.allowZero),
    defaultHelp: async () => opts.default,
    parse: async (input, _ctx, flag) => durationFlagMs(flag.name, input, opts.allowZero),
  })();
}

/**
 * A duration flag without a default of its own: not given, it is undefined
 * and the value comes from elsewhere (a configuration field's default, when a
 * config file may set it too); `shownDefault` is the default --help shows.
 */
export function configDurationFlag(opts: Omit<DurationFlagOptions, 'default'> & { shownDefault: string }) {
  return Flags.custom<number>({
    summary: opts.summary,
    hidden: opts.hidden,
    helpGroup: opts.helpGroup,
    helpValue: '<value>',
    defaultHelp: async () => opts.shownDefault,
    parse: async (input, _ctx, flag) => durationFlagMs(flag.name, input, opts.allowZero),
  })();
}
