/**
 * Go-style durations, as the kubelet's flags take them: "2m", "1m30s",
 * "500ms", "1h", "10s". Bare numbers are rejected: a unit is required.
 */
const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds in `text`, or null when it is not a duration. */
export function parseDuration(text: string): number | null {
  const s = text.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  if (s.length === 0) return null;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (m === null) return null;
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
    pos = re.lastIndex;
  }
  return total;
}

/** Format milliseconds the way Go prints a time.Duration ("2m0s", "1.5s", "300ms", "1h0m0s"); 0s for none. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${trim(ms)}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h > 0) return `${h}h${m}m${trim(s)}s`;
  if (m > 0) return `${m}m${trim(s)}s`;
  return `${trim(s)}s`;
}

function trim(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toFixed(3)));
}
