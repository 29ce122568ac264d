/**
 * A small leveled logger writing to stderr (results go to stdout).
 * The level is set once by the base command from --log-level.
 */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

let current: LogLevel = 'info';
let sink: (line: string) => void = (line) => process.stderr.write(line + '\n');

export function setLogLevel(level: LogLevel): void {
  current = level;
}
export function logLevel(): LogLevel {
  return current;
}
/** Redirect log lines (tests; the dashboard). */
export function setLogSink(fn: (line: string) => void): void {
  sink = fn;
}

function enabled(level: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) <= LOG_LEVELS.indexOf(current);
}

export const log = {
  error(msg: string): void {
    if (enabled('error')) sink(`error: ${msg}`);
  },
  warn(msg: string): void {
    if (enabled('warn')) sink(`warning: ${msg}`);
  },
  info(msg: string): void {
    if (enabled('info')) sink(msg);
  },
  debug(msg: string): void {
    if (enabled('debug')) sink(`debug: ${msg}`);
  },
};
