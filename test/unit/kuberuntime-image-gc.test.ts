import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_IMAGE_GC_POLICY,
  detectImages,
  freeDiskSpaceFailedMessage,
  freeSpaceVerdict,
  imageGCDisabled,
  imagesInEvictionOrder,
  planDiskUsage,
  validateImageGCPolicy,
  type ImageRecord,
} from '../../src/lib/kuberuntime/image-gc.js';
import { forgetPulledImage, listPulledImages, normalizeImageName, pulledByKlet, recordPulledImage } from '../../src/lib/kuberuntime/pulled-images.js';

const rec = (r: Partial<ImageRecord> = {}): ImageRecord => ({ firstDetected: 0, lastUsed: 0, size: 100, pinned: false, ...r });

describe('validateImageGCPolicy (the kubelet\'s validation messages)', () => {
  it.each<[number, number, { fields: string[]; message: string } | null]>([
    [85, 80, null],
    [100, 0, null],
    [101, 80, { fields: ['imageGCHighThresholdPercent'], message: 'invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive' }],
    [85, -1, { fields: ['imageGCLowThresholdPercent'], message: 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and 100, inclusive' }],
    [80, 80, { fields: ['imageGCLowThresholdPercent', 'imageGCHighThresholdPercent'], message: 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80' }],
    [70, 90, { fields: ['imageGCLowThresholdPercent', 'imageGCHighThresholdPercent'], message: 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 70' }],
  ])('high %d low %d', (high, low, want) => {
    expect(validateImageGCPolicy({ highThresholdPercent: high, lowThresholdPercent: low })).toEqual(want);
  });

  it('a high threshold of 100 turns image GC off', () => {
    expect(imageGCDisabled({ ...DEFAULT_IMAGE_GC_POLICY, highThresholdPercent: 100 })).toBe(true);
    expect(imageGCDisabled(DEFAULT_IMAGE_GC_POLICY)).toBe(false);
  });
});

describe('detectImages', () => {
  it('records first detection once, last use when in use, and forgets images that are gone', () => {
    const before = new Map([
      ['a', rec({ firstDetected: 5, lastUsed: 7 })],
      ['gone', rec()],
    ]);
    const after = detectImages(before, [{ id: 'a', size: 10, pinned: false }, { id: 'b', size: 20, pinned: true }], new Set(['b']), 50, 60);
    expect([...after.entries()]).toEqual([
      ['a', { firstDetected: 5, lastUsed: 7, size: 10, pinned: false }],
      ['b', { firstDetected: 50, lastUsed: 60, size: 20, pinned: true }],
    ]);
  });
});

describe('imagesInEvictionOrder', () => {
  it('least recently used first, then first detected; skips in use, pinned and images that are not klet\'s', () => {
    const records = new Map([
      ['used', rec({ lastUsed: 1 })],
      ['pinned', rec({ pinned: true })],
      ['foreign', rec()],
      ['late', rec({ lastUsed: 30, firstDetected: 1 })],
      ['early', rec({ lastUsed: 10, firstDetected: 9 })],
      ['early-first', rec({ lastUsed: 10, firstDetected: 2 })],
    ]);
    const order = imagesInEvictionOrder(records, new Set(['used']), (id) => id !== 'foreign').map((c) => c.id);
    expect(order).toEqual(['early-first', 'early', 'late']);
  });
});

describe('planDiskUsage (GarbageCollect\'s arithmetic)', () => {
  const policy = { ...DEFAULT_IMAGE_GC_POLICY };
  it.each<[string, number, number, ReturnType<typeof planDiskUsage>]>([
    ['below the high threshold', 1000, 200, { kind: 'below', usagePercent: 80 }],
    ['at the high threshold: free down to the low one', 1000, 150, { kind: 'free', usagePercent: 85, amountToFree: 50 }],
    ['usage is 100 minus the truncated free percent, as Go computes it (84.1 % counts as 85)', 1000, 159, { kind: 'free', usagePercent: 85, amountToFree: 41 }],
    ['available above capacity counts as capacity', 1000, 5000, { kind: 'below', usagePercent: 0 }],
    ['capacity 0 is invalid', 0, 0, { kind: 'invalid-capacity' }],
  ])('%s', (_n, capacity, available, want) => {
    expect(planDiskUsage({ capacityBytes: capacity, availableBytes: available }, policy)).toEqual(want);
  });

  it('freeSpace skips images used at or after the GC began and those younger than MinAge', () => {
    const c = (r: Partial<ImageRecord>) => ({ id: 'x', ...rec(r) });
    expect(freeSpaceVerdict(c({ lastUsed: 100 }), 100, policy)).toBe('recent');
    expect(freeSpaceVerdict(c({ firstDetected: 100 - 119_999 }), 100, policy)).toBe('young');
    expect(freeSpaceVerdict(c({ firstDetected: 100 - 120_000 }), 100, policy)).toBe('remove');
  });

  it('FreeDiskSpaceFailed says what the kubelet says', () => {
    expect(freeDiskSpaceFailedMessage(50, 10)).toBe('Failed to garbage collect required amount of images. Attempted to free 50 bytes, but only found 10 bytes eligible to free.');
  });
});

describe('pulled images (which images are klet\'s to remove)', () => {
  it.each([
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['org/app:1', 'docker.io/org/app:1'],
    ['registry.example/app', 'registry.example/app:latest'],
    ['127.0.0.1:5000/gc/app:1', '127.0.0.1:5000/gc/app:1'],
    ['localhost/klet/busybox:1.36', 'localhost/klet/busybox:1.36'],
    [`app@sha256:${'a'.repeat(64)}`, `docker.io/library/app@sha256:${'a'.repeat(64)}`],
  ])('%s is named %s by containerd', (image, want) => {
    expect(normalizeImageName(image)).toBe(want);
  });

  const d = `sha256:${'b'.repeat(64)}`;
  it.each<[string, { repoTags: string[]; repoDigests: string[] }, string[], boolean]>([
    ['a tag klet pulled, with its digest', { repoTags: ['r.example/a:1'], repoDigests: [`r.example/a@${d}`] }, ['r.example/a:1'], true],
    ['a tag another client added too', { repoTags: ['r.example/a:1', 'r.example/a:mine'], repoDigests: [] }, ['r.example/a:1'], false],
    ['a digest of a repository klet never pulled from', { repoTags: ['r.example/a:1'], repoDigests: [`r.example/b@${d}`] }, ['r.example/a:1'], false],
    ['an image left without a tag by a re-pull of klet\'s', { repoTags: [], repoDigests: [`r.example/a@${d}`] }, ['r.example/a:1'], true],
    ['an image klet pulled by digest', { repoTags: [], repoDigests: [`r.example/a@${d}`] }, [`r.example/a@${d}`], true],
    ['a nameless image', { repoTags: [], repoDigests: [] }, ['r.example/a:1'], false],
    ['an image klet did not pull', { repoTags: ['localhost/klet/busybox:1.36'], repoDigests: [] }, [], false],
  ])('%s', (_n, image, pulled, want) => {
    expect(pulledByKlet(image, new Set(pulled))).toBe(want);
  });

  const dirs: string[] = [];
  afterEach(() => {
    for (const x of dirs.splice(0)) fs.rmSync(x, { recursive: true, force: true });
  });

  it('records under the root dir, lists and forgets', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-pulled-'));
    dirs.push(root);
    expect(await listPulledImages(root)).toEqual([]);
    await recordPulledImage(root, 'busybox:1.36', 'sha256:1');
    await recordPulledImage(root, '127.0.0.1:5000/gc/app:1', 'sha256:2');
    await recordPulledImage(root, 'busybox:1.36', 'sha256:3');
    fs.writeFileSync(path.join(root, 'pulled-images', 'junk.json'), '{');
    const refs = (await listPulledImages(root)).map((r) => `${r.ref} ${r.imageRef}`).sort();
    expect(refs).toEqual(['127.0.0.1:5000/gc/app:1 sha256:2', 'docker.io/library/busybox:1.36 sha256:3']);
    await forgetPulledImage(root, 'docker.io/library/busybox:1.36');
    expect((await listPulledImages(root)).map((r) => r.ref)).toEqual(['127.0.0.1:5000/gc/app:1']);
  });
});
