/** `klet explain`'s screen: the explanation (lib/status/explain.ts) as plain text. */
import type { ContainerExplanation, Explanation } from '../lib/status/explain.js';
import { humanDuration } from '../lib/status/format.js';
import { formatTable } from '../lib/util/table.js';

const ago = (iso: string | undefined, now: number) => (iso === undefined ? '<unknown>' : `${humanDuration(now - Date.parse(iso))} ago`);

function when(next: Explanation['next']): string {
  if (next.at === undefined) return '';
  return ` (at ${next.at}, in ${humanDuration(next.inMs ?? 0)})`;
}

function containerLines(c: ContainerExplanation, now: number, summary: string): string[] {
  const facts = [c.state + (c.reason ? ` (${c.reason})` : '')];
  if (c.exitCode !== undefined) facts.push(`exit code ${c.exitCode}`);
  facts.push(`restarts ${c.restartCount}`, c.ready ? 'ready' : 'not ready');
  if (c.lastTermination) facts.push(`last exit code ${c.lastTermination.exitCode}${c.lastTermination.reason ? ` (${c.lastTermination.reason})` : ''}${c.lastTermination.finishedAt ? ` ${ago(c.lastTermination.finishedAt, now)}` : ''}`);
  if (c.backoff) facts.push(`${c.backoff.reason} back-off ${humanDuration(c.backoff.delayMs)}, ${humanDuration(c.backoff.remainingMs)} left`);
  const out = [`  ${c.name}${c.type === 'regular' ? '' : ` [${c.type}]`}: ${facts.join(', ')}`];
  // Said once: the container the summary is about is not told again.
  if (!summary.startsWith(c.sentence)) out.push(`    ${c.sentence}`);
  for (const p of c.probes) {
    const failures = p.failures === undefined ? '' : `, ${p.failures} failure${p.failures === 1 ? '' : 's'} seen`;
    out.push(`    ${p.probe} probe: ${p.result} (every ${p.periodSeconds}s, failureThreshold ${p.failureThreshold}${failures})${p.lastFailure ? `; last: ${p.lastFailure}` : ''}`);
  }
  if (c.log.length > 0) {
    out.push(`    Log (last ${c.log.length} line${c.log.length === 1 ? '' : 's'}):`);
    for (const l of c.log) out.push(`      | ${l}`);
  }
  return out;
}

/** The explanation as `klet explain` prints it; `now` for the "ago"s. */
export function formatExplanation(x: Explanation, now: number): string {
  const lines = [
    `Pod ${x.pod.namespace}/${x.pod.name} (uid ${x.pod.uid}): ${x.status}, phase ${x.phase}, ${x.ready} ready${x.reason ? `; reason ${x.reason}` : ''}`,
    '',
    `Why:  ${x.summary}`,
    `Next: ${x.next.sentence}${when(x.next)}`,
    '',
  ];
  const d = x.decision;
  lines.push(
    d.from === 'sync'
      ? `Last plan of klet sync (decided ${ago(d.at, now)}, last synced ${ago(d.lastSyncAt, now)}):`
      : 'Plan of the next sync (no klet sync runs: computed from the records and the runtime):',
  );
  for (const s of d.sentences) lines.push(`  - ${s.trimEnd()}`);
  lines.push('', 'Containers:');
  for (const c of x.containers) lines.push(...containerLines(c, now, x.summary));
  if (x.problems.length > 0) {
    lines.push('', 'Problems:');
    for (const p of x.problems) lines.push(`  ${p.reason}: ${p.message}`);
  }
  lines.push('', x.source === 'sync' ? 'Events:' : 'Events (from the records and the runtime; no klet sync runs):');
  if (x.events.length === 0) lines.push('  <none>');
  else {
    const rows = x.events.map((e) => [
      e.lastSeen === undefined ? '<unknown>' : humanDuration(now - Date.parse(e.lastSeen)),
      e.type,
      e.reason,
      e.object ?? '',
      `${e.message}${e.count > 1 ? ` (x${e.count})` : ''}`,
    ]);
    lines.push(...formatTable(['LAST SEEN', 'TYPE', 'REASON', 'CONTAINER', 'MESSAGE'], rows).split('\n').map((l) => `  ${l}`));
  }
  return lines.join('\n') + '\n';
}
