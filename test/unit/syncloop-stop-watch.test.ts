/**
 * A stop of `klet sync` that takes longer than SLOW_STOP_WARNING_MS names, in
 * one warning, the parts it still waits for (a request or a wait that missed
 * the signal shows up in the log instead of a silent hang).
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { setLogSink } from '../../src/lib/log.js';
import { SLOW_STOP_WARNING_MS, stopWatch } from '../../src/lib/syncloop/run-sync.js';

let lines: string[];
beforeEach(() => {
  vi.useFakeTimers();
  lines = [];
  setLogSink((l) => lines.push(l));
});
afterEach(() => {
  vi.useRealTimers();
  setLogSink((l) => process.stderr.write(l + '\n'));
});

it('names the parts still running SLOW_STOP_WARNING_MS after the abort, once; not those done', async () => {
  const ctrl = new AbortController();
  const w = stopWatch(ctrl.signal);
  void w.track('event sender', new Promise(() => undefined));
  await w.track('local API', Promise.resolve());
  // Before the abort, time passes without a word.
  await vi.advanceTimersByTimeAsync(SLOW_STOP_WARNING_MS * 2);
  expect(lines).toEqual([]);
  ctrl.abort();
  await vi.advanceTimersByTimeAsync(SLOW_STOP_WARNING_MS - 1);
  expect(lines).toEqual([]);
  await vi.advanceTimersByTimeAsync(SLOW_STOP_WARNING_MS * 3);
  expect(lines).toEqual([`warning: sync: still stopping after ${SLOW_STOP_WARNING_MS / 1000} s; waiting for: event sender`]);
  w.dispose();
});

it('says nothing when everything stopped in time, or after dispose', async () => {
  const ctrl = new AbortController();
  const w = stopWatch(ctrl.signal);
  const p = w.track('sync loop', new Promise<void>((r) => ctrl.signal.addEventListener('abort', () => r())));
  ctrl.abort();
  await p;
  await vi.advanceTimersByTimeAsync(SLOW_STOP_WARNING_MS * 2);
  const ctrl2 = new AbortController();
  const w2 = stopWatch(ctrl2.signal);
  void w2.track('event sender', new Promise(() => undefined));
  w2.dispose();
  ctrl2.abort();
  await vi.advanceTimersByTimeAsync(SLOW_STOP_WARNING_MS * 2);
  expect(lines).toEqual([]);
  w.dispose();
});
