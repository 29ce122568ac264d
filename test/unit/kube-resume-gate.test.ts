/** lib/kube/resume-gate.ts: after an outage one watch scouts, the others do what it learns. */
import { expect, it } from 'vitest';
import { ResumeGate } from '../../src/lib/kube/resume-gate.js';

it('the first watch scouts; the others wait and all get what it learned', async () => {
  const gate = new ResumeGate();
  const s = new AbortController().signal;
  expect(await gate.wait(s)).toBe('scout');
  const a = gate.wait(s);
  const b = gate.wait(s);
  expect(gate.waiters).toBe(2);
  gate.learned('relist');
  expect(await a).toBe('relist');
  expect(await b).toBe('relist');
  // The next outage has a scout of its own.
  expect(await gate.wait(s)).toBe('scout');
  const c = gate.wait(s);
  gate.learned('resume');
  expect(await c).toBe('resume');
  expect(gate.waiters).toBe(0);
});

it('a scout that stops hands the role to the longest waiter; a waiter whose watch stops leaves the queue', async () => {
  const gate = new ResumeGate();
  const s = new AbortController().signal;
  const gone = new AbortController();
  expect(await gate.wait(s)).toBe('scout');
  const leaving = gate.wait(gone.signal);
  const first = gate.wait(s);
  const second = gate.wait(s);
  gone.abort();
  expect(await leaving).toBe('resume');
  expect(gate.waiters).toBe(2);
  gate.abandon();
  expect(await first).toBe('scout');
  expect(gate.waiters).toBe(1);
  gate.learned('relist');
  expect(await second).toBe('relist');
  // Nobody waits: abandoning frees the role for the next watch.
  expect(await gate.wait(s)).toBe('scout');
  gate.abandon();
  expect(await gate.wait(s)).toBe('scout');
  // An already aborted signal does not queue.
  const dead = new AbortController();
  dead.abort();
  expect(await gate.wait(dead.signal)).toBe('resume');
  expect(gate.waiters).toBe(0);
});
