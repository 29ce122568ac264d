// The machine's own timer lateness: a bare Node process (no work of its own)
// waking at every 100 ms slot for a window, reporting how late its timers
// fired (p50, p99 ms). Run next to a measured process, it says how much of
// that process's lateness any process on this machine would have had.
import { spawn } from 'node:child_process';

const SCRIPT = `
const end = Date.now() + Number(process.argv[1]);
const late = [];
const next = () => {
  const due = Math.ceil((Date.now() + 1) / 100) * 100;
  if (due > end) {
    late.sort((a, b) => a - b);
    const q = (x) => late[Math.min(late.length - 1, Math.floor(x * late.length))];
    return console.log(JSON.stringify({ p50: q(0.5), p99: q(0.99), n: late.length }));
  }
  setTimeout(() => { late.push(Math.max(0, Date.now() - due)); next(); }, due - Date.now());
};
next();
`;

/** Starts the floor process for `windowMs`; resolves with { p50, p99, n } (ms) when it is done. */
export function timerFloor(windowMs) {
  const child = spawn(process.execPath, ['-e', SCRIPT, String(windowMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const done = new Promise((resolve) => child.once('exit', () => resolve(JSON.parse(out || '{}'))));
  return { child, done };
}
