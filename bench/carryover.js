// Each variant's times grouped by the variant that ran just before it, from
// an `npm run bench` results file (runs record `after` since 2026-11-26):
//   node bench/carryover.js bench/results/FILE.json [SCENARIO]
// Shows whether a run pays for its predecessor (bench/README.md, Method).
import fs from 'node:fs';
import { median } from './stats.js';

const [file, only] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/carryover.js RESULTS.json [SCENARIO]');
  process.exit(1);
}
let r;
try {
  r = JSON.parse(fs.readFileSync(file, 'utf8'));
} catch (err) {
  console.error(`carryover: ${file}: ${err.message.split('\n')[0]}`);
  process.exit(1);
}
if (!r || typeof r.scenarios !== 'object') {
  console.error(`carryover: ${file}: not an npm run bench results file (no "scenarios")`);
  process.exit(1);
}
for (const [name, s] of Object.entries(r.scenarios)) {
  if ((only && name !== only) || !s.runs || s.unit !== 'ms') continue;
  console.log(`${name} (ms): median by the variant run just before`);
  for (const [variant, runs] of Object.entries(s.runs)) {
    const by = new Map();
    for (const x of runs) if (x.after !== undefined && Number.isFinite(x.ms)) by.set(x.after ?? '(none)', [...(by.get(x.after ?? '(none)') ?? []), x.ms]);
    if (by.size === 0) continue;
    const cells = [...by].sort(([a], [b]) => a.localeCompare(b)).map(([after, xs]) => `${after} ${Math.round(median(xs))} (${xs.length})`);
    console.log(`  ${variant.padEnd(22)} all ${Math.round(median(runs.map((x) => x.ms)))} | ${cells.join(' | ')}`);
  }
}
