/**
 * An unknown command is bad input like any other: one line on stderr, exit 2,
 * with the closest command names as a hint.
 */
import type { Hook } from '@oclif/core';

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const prev = d[i - 1] as number[];
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

const hook: Hook<'command_not_found'> = async function (opts) {
  const typed = opts.id.replaceAll(':', ' ');
  const ids = opts.config.commandIDs.map((id) => id.replaceAll(':', ' '));
  const close = ids
    .map((id) => ({ id, d: distance(typed, id) }))
    .filter((x) => x.d <= Math.max(2, Math.floor(typed.length / 3)) || x.id.startsWith(typed.split(' ')[0] ?? ''))
    .sort((a, b) => a.d - b.d)
    .slice(0, 3)
    .map((x) => `klet ${x.id}`);
  const hint = close.length > 0 ? `did you mean: ${close.join(', ')}?` : 'see: klet --help';
  process.stderr.write(`error: unknown command "${typed}" (${hint})\n`);
  process.exitCode = 2;
};

export default hook;
