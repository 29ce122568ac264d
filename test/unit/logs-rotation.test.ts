/**
 * The kubelet's container log rotation plan (pkg/kubelet/logs/container_log_manager.go:
 * cleanupUnusedLogs, removeExcessLogs, compressLog, rotateLatestLog's name) as pure functions.
 */
import { describe, expect, it } from 'vitest';
import { rotatedName, rotationPlan, splitRotated } from '../../src/lib/logs/rotation.js';

const L = '/var/log/pods/ns_p_u/c/0.log';

describe('splitRotated (filterUnusedLogs)', () => {
  it('a .tmp is never in use; an uncompressed file is not once its .gz exists (compression finished, removal cut short)', () => {
    const rotated = [`${L}.20261129-101010.gz`, `${L}.20261129-101020`, `${L}.20261129-101020.gz`, `${L}.20261129-101030`, `${L}.20261129-101030.tmp`];
    expect(splitRotated(rotated)).toEqual({
      inUse: [`${L}.20261129-101010.gz`, `${L}.20261129-101020.gz`, `${L}.20261129-101030`],
      unused: [`${L}.20261129-101020`, `${L}.20261129-101030.tmp`],
    });
  });
});

describe('rotationPlan', () => {
  it.each([
    ['nothing rotated yet', [], 5, { remove: [], compress: [] }],
    ['the last rotated file is compressed before the next rename', [`${L}.20261129-101010`], 5, { remove: [], compress: [`${L}.20261129-101010`] }],
    [
      'maxFiles 5 keeps 3 rotated before the rename (the live file and the new one make 5), the oldest go',
      [`${L}.20261129-101040`, `${L}.20261129-101010.gz`, `${L}.20261129-101030.gz`, `${L}.20261129-101020.gz`, `${L}.20261129-101000.gz`],
      5,
      { remove: [`${L}.20261129-101000.gz`, `${L}.20261129-101010.gz`], compress: [`${L}.20261129-101040`] },
    ],
    ['maxFiles 2 keeps none', [`${L}.20261129-101010`], 2, { remove: [`${L}.20261129-101010`], compress: [] }],
    [
      'leftovers of an interrupted pass go first',
      [`${L}.20261129-101010.tmp`, `${L}.20261129-101010`, `${L}.20261129-101000.gz`, `${L}.20261129-101000`],
      3,
      { remove: [`${L}.20261129-101010.tmp`, `${L}.20261129-101000`, `${L}.20261129-101000.gz`], compress: [`${L}.20261129-101010`] },
    ],
  ])('%s', (_what, rotated, maxFiles, plan) => {
    expect(rotationPlan(rotated, maxFiles)).toEqual(plan);
  });
});

describe('rotatedName', () => {
  it("appends the local time in Go's 20060102-150405 layout", () => {
    expect(rotatedName(L, new Date(2026, 0, 2, 3, 4, 5))).toBe(`${L}.20260102-030405`);
    expect(rotatedName(L, new Date(2026, 10, 29, 23, 59, 59))).toBe(`${L}.20261129-235959`);
  });
});
