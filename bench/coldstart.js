// Cold-start benchmark: `klet --version` and `klet status --help` against the
// baseline `node -e 0`, run alternately on the same machine (round-robin, so
// noise hits all three alike), N rounds, medians and ratios.
// Usage: node bench/coldstart.js [rounds=10]
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const rounds = Number(process.argv[2] ?? 10);
const node = process.execPath;
const cases = {
  'node -e 0': [node, ['-e', '0']],
  'klet --version': [node, [path.join(root, 'bin/run.js'), '--version']],
  'klet status --help': [node, [path.join(root, 'bin/run.js'), 'status', '--help']],
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));

// One warm-up round fills the page cache for every case.
for (const [cmd, args] of Object.values(cases)) spawnSync(cmd, args, { stdio: 'ignore' });
for (let i = 0; i < rounds; i++) {
  for (const [name, [cmd, args]] of Object.entries(cases)) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(cmd, args, { stdio: 'ignore' });
    const t1 = process.hrtime.bigint();
    if (r.status !== 0) throw new Error(`${name} exited ${r.status}`);
    times[name].push(Number(t1 - t0) / 1e6);
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const base = median(times['node -e 0']);
const budgets = { 'klet --version': 1.3, 'klet status --help': 1.5 };
const result = { node: process.version, rounds, cases: {} };
for (const [name, xs] of Object.entries(times)) {
  const med = median(xs);
  result.cases[name] = { medianMs: Number(med.toFixed(1)), ratio: Number((med / base).toFixed(2)), budget: budgets[name] ?? null };
}
for (const [name, c] of Object.entries(result.cases)) {
  const verdict = c.budget === null ? 'baseline' : c.ratio <= c.budget ? `within ${c.budget}x` : `OVER ${c.budget}x budget`;
  console.log(`${name.padEnd(22)} median ${String(c.medianMs).padStart(7)} ms   ${String(c.ratio).padStart(5)}x   ${verdict}`);
}
if (process.argv.includes('--json')) console.log(JSON.stringify(result));
