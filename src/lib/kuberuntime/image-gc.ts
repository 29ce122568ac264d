/**
 * Image garbage collection as the kubelet plans it (pkg/kubelet/images/
 * image_gc_manager.go). Pure: the image records (when each image was first
 * seen and last in use), the eviction order and how much to free; the
 * runner (gc-runner.ts) lists, statfs'es and removes.
 *
 * One difference, on purpose: the kubelet may remove any unused image of
 * its runtime. klet never removes what it did not create, so only images
 * that klet pulled (pulled-images.ts: every tag of the image is a reference
 * klet recorded pulling) are candidates; images imported with `klet images
 * import`, the built-in ones `klet runtime start` imports (its sandbox image
 * among them) and anything another client pulled are never removed. An
 * image in use by any container of the runtime, klet's or not, running or
 * dead, is never removed either.
 */

/** The kubelet's ImageGCPolicy (MinAge in ms). */
export interface ImageGCPolicy {
  /** --image-gc-high-threshold: at or above this disk usage (percent) GC runs; 100 turns image GC off. */
  highThresholdPercent: number;
  /** --image-gc-low-threshold: GC frees down to this usage (percent). */
  lowThresholdPercent: number;
  /** --minimum-image-gc-age: an image first seen less than this long ago is kept. */
  minAgeMs: number;
}

/** The kubelet's defaults (imageGCHighThresholdPercent 85, imageGCLowThresholdPercent 80, imageMinimumGCAge 2m). */
export const DEFAULT_IMAGE_GC_POLICY: Readonly<ImageGCPolicy> = Object.freeze({ highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 });

/** The kubelet's ImageGCPeriod. */
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

/** The configuration fields of the thresholds (the KubeletConfiguration's names). */
export type ImageGCField = 'imageGCHighThresholdPercent' | 'imageGCLowThresholdPercent';

/**
 * The kubelet's validation of the policy (pkg/kubelet/apis/config/validation),
 * with its messages: null when valid, else the first problem and the fields
 * whose values it is about (for the caller to name where they came from).
 */
export function validateImageGCPolicy(p: Pick<ImageGCPolicy, 'highThresholdPercent' | 'lowThresholdPercent'>): { fields: ImageGCField[]; message: string } | null {
  const range = (v: number) => Number.isInteger(v) && v >= 0 && v <= 100;
  if (!range(p.highThresholdPercent)) {
    return { fields: ['imageGCHighThresholdPercent'], message: `invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) ${p.highThresholdPercent} must be between 0 and 100, inclusive` };
  }
  if (!range(p.lowThresholdPercent)) {
    return { fields: ['imageGCLowThresholdPercent'], message: `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${p.lowThresholdPercent} must be between 0 and 100, inclusive` };
  }
  if (p.lowThresholdPercent >= p.highThresholdPercent) {
    return {
      fields: ['imageGCLowThresholdPercent', 'imageGCHighThresholdPercent'],
      message: `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${p.lowThresholdPercent} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${p.highThresholdPercent}`,
    };
  }
  return null;
}

/** Image GC is off when the high threshold is 100 (the kubelet's StartGarbageCollection, without a maximum age). */
export function imageGCDisabled(p: ImageGCPolicy): boolean {
  return p.highThresholdPercent === 100;
}

/** What the kubelet keeps per image ID. Times in ms since the epoch (0: never). */
export interface ImageRecord {
  firstDetected: number;
  lastUsed: number;
  size: number;
  pinned: boolean;
}

export interface RuntimeImage {
  id: string;
  size: number;
  pinned: boolean;
}

/**
 * detectImages: the records after a look at the runtime's images. A new
 * image is first detected at `detectTime`; one in use is last used `now`;
 * records of images no longer present are dropped. Returns a new map.
 */
export function detectImages(
  records: ReadonlyMap<string, ImageRecord>,
  images: readonly RuntimeImage[],
  inUse: ReadonlySet<string>,
  detectTime: number,
  now: number,
): Map<string, ImageRecord> {
  const out = new Map<string, ImageRecord>();
  for (const img of images) {
    const prev = records.get(img.id);
    out.set(img.id, {
      firstDetected: prev?.firstDetected ?? detectTime,
      lastUsed: inUse.has(img.id) ? now : (prev?.lastUsed ?? 0),
      size: img.size,
      pinned: img.pinned,
    });
  }
  return out;
}

export interface EvictionCandidate extends ImageRecord {
  id: string;
}

/**
 * imagesInEvictionOrder: the images that may go, least recently used first
 * (then first detected first): not in use, not pinned, and `eligible` (klet's
 * ownership rule).
 */
export function imagesInEvictionOrder(
  records: ReadonlyMap<string, ImageRecord>,
  inUse: ReadonlySet<string>,
  eligible: (id: string) => boolean,
): EvictionCandidate[] {
  const out: EvictionCandidate[] = [];
  for (const [id, r] of records) {
    if (inUse.has(id) || r.pinned || !eligible(id)) continue;
    out.push({ id, ...r });
  }
  return out.sort((a, b) => a.lastUsed - b.lastUsed || a.firstDetected - b.firstDetected || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The image filesystem: capacity and available bytes (statfs). */
export interface ImageFsStats {
  capacityBytes: number;
  availableBytes: number;
}

export type DiskPlan =
  | { kind: 'invalid-capacity' }
  | { kind: 'below'; usagePercent: number }
  | { kind: 'free'; usagePercent: number; amountToFree: number };

/**
 * GarbageCollect's disk check: usage as the kubelet computes it
 * (100 − available·100/capacity, truncated) and, at or above the high
 * threshold, how many bytes bring it down to the low threshold.
 */
export function planDiskUsage(fs: ImageFsStats, policy: ImageGCPolicy): DiskPlan {
  const capacity = Math.trunc(fs.capacityBytes);
  const available = Math.min(Math.trunc(fs.availableBytes), capacity);
  if (capacity <= 0) return { kind: 'invalid-capacity' };
  const usagePercent = 100 - Math.trunc((available * 100) / capacity);
  if (usagePercent < policy.highThresholdPercent) return { kind: 'below', usagePercent };
  const amountToFree = Math.trunc((capacity * (100 - policy.lowThresholdPercent)) / 100) - available;
  return { kind: 'free', usagePercent, amountToFree };
}

/**
 * freeSpace's filter: whether a candidate may be removed at `freeTime`
 * ('recent': used at or after it; 'young': first seen less than MinAge ago).
 */
export function freeSpaceVerdict(c: EvictionCandidate, freeTime: number, policy: ImageGCPolicy): 'remove' | 'recent' | 'young' {
  if (c.lastUsed >= freeTime) return 'recent';
  if (freeTime - c.firstDetected < policy.minAgeMs) return 'young';
  return 'remove';
}

/** The kubelet's FreeDiskSpaceFailed message. */
export function freeDiskSpaceFailedMessage(amountToFree: number, freed: number): string {
  return `Failed to garbage collect required amount of images. Attempted to free ${amountToFree} bytes, but only found ${freed} bytes eligible to free.`;
}
