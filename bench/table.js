// Markdown tables from `npm run bench` results, for bench/README.md:
//   node bench/table.js bench/results/A.json [B.json ...]
// One row per variant (median, min, max) and per klet/peer ratio (pair by
// pair: median with its 95 % bootstrap interval when the results have one,
// min, max, and the budget's verdict), with each scenario's load average.
import fs from 'node:fs';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node bench/table.js RESULTS.json...');
  process.exit(1);
}
const out = ['| scenario | variant / ratio | median | min | max | n / pairs | load (1 min) before → after |', '|---|---|---|---|---|---|---|'];
for (const file of files) {
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const [name, s] of Object.entries(r.scenarios)) {
    const load = `${s.loadBefore?.[0]} → ${s.loadAfter?.[0]}`;
    if (s.skipped || s.error) {
      out.push(`| ${name} | ${s.skipped ? 'skipped' : 'ERROR'}: ${(s.skipped ?? s.error).split('\n')[0].replaceAll('|', '\\|')} | | | | | ${load} |`);
      continue;
    }
    for (const [variant, v] of Object.entries(s.summary)) {
      const rows = 'median' in v || 'p50' in v ? [[variant, v]] : Object.entries(v).map(([k, x]) => [`${variant} ${k}`, x]);
      for (const [label, x] of rows) {
        if ('p50' in x) out.push(`| ${name} | ${label} | p50 ${x.p50} / p99 ${x.p99} ms | ${x.min} | ${x.max} | ${x.n} | ${load} |`);
        else out.push(`| ${name} | ${label}${s.unit === 'ms' ? ' (ms)' : ''} | ${x.median} | ${x.min} | ${x.max} | ${x.n} | ${load} |`);
        if (x.stopped) out.push(`| ${name} | ${label}: all stopped (ms) | ${x.stopped.median} | ${x.stopped.min} | ${x.stopped.max} | ${x.stopped.n} | ${load} |`);
      }
    }
    for (const q of s.ratios ?? []) {
      const key = q.key === 'ms' ? '' : ` [${q.key}]`;
      const ci = q.ci95 ? ` (95 %: ${q.ci95[0]}–${q.ci95[1]})` : '';
      const budget = q.budget !== undefined ? `; budget ${q.atLeast ? '≥' : '≤'} ${q.budget}×: ${q.verdict ?? 'no interval'}` : '';
      out.push(`| ${name} | **${q.klet} / ${q.peer}${key}** | **${q.median}×**${ci}${budget} | ${q.min ?? ''} | ${q.max ?? ''} | ${q.pairs.length || ''} | ${load} |`);
    }
    for (const a of s.absolute ?? []) out.push(`| ${name} | **${a.variant} [${a.key}]** | **${a.label ? `${a.label} ` : ''}${a.median ?? a.value}**${a.ci95 ? ` (95 %: ${a.ci95[0]}–${a.ci95[1]})` : ''}; budget ≤ ${a.budget}: ${a.verdict ?? 'no interval'} | | | | ${load} |`);
    if (s.leaks) for (const [k, v] of Object.entries(s.leaks)) out.push(`| ${name} | leaks after ${k} | ${Object.entries(v).map(([a, b]) => `${a} ${b}`).join(', ')} | | | | ${load} |`);
    if (s.rssGrowthMB !== undefined) out.push(`| ${name} | klet sync RSS growth over the cycles (MB) | ${s.rssGrowthMB} | | | | ${load} |`);
  }
  out.push(`| | *${file.split('/').at(-1)}: ${r.date}, ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.node}, ${r.machine.containerd.split(' ').slice(0, 3).join(' ')}, ${r.machine.kubelet ?? 'no kubelet'}; leaks at the end: ${JSON.stringify(r.leaks)}* | | | | | |`);
}
console.log(out.join('\n'));
