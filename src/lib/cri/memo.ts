/**
 * List decoding that reuses the messages of earlier lists.
 *
 * The PLEG lists every sandbox and container once a second, and on a
 * steady node each item of the answer is the item of the answer before.
 * strings.ts already spares the strings; the objects around them (the
 * message, its metadata, its label and annotation maps and one entry object
 * per label) were still built anew for every item of every relist: with 110
 * pods that was about a sixth of what `klet sync --kubeconfig` spent
 * holding them, and its garbage a good part of the collector's work.
 *
 * MessageMemo keeps, for each item it decoded recently, the item's fields
 * as bytes and the decoded message. An item equal to a kept one is answered
 * with the kept message: no decoding, no allocation beyond the answer's
 * array. "Equal" is protobuf equality, not byte equality: the runtime
 * (containerd, in Go) writes map entries in random order, so the same
 * container comes with its labels shuffled from one list to the next. The
 * item's map fields (`mapFields`) are compared as sets of entries, every
 * other field byte for byte in order; all bytes are compared, so a hash
 * collision costs a decode, never a wrong message.
 *
 * The kept messages are shared by every answer that contains them, so they
 * are deeply frozen: a caller that tried to change one would throw instead
 * of changing another caller's answer.
 *
 * Bounded like StringTable: two generations, each of at most
 * `generationBytes` of kept bytes; an item not seen for two generations is
 * dropped. A steady node keeps one copy of each of its items (1–2 kB each).
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';

/** One generation's kept bytes (a node with 110 pods keeps ~0.4 MB). */
export const DEFAULT_GENERATION_BYTES = 2 * 1024 * 1024;

interface Kept<T> {
  /** The item's non-map fields, concatenated in their order. */
  readonly fixed: Buffer;
  /** Its map entries (tag included) by the hash of their key. */
  readonly entries: Map<number, Buffer>;
  readonly size: number;
  readonly value: T;
}

/** How much of an item its lookup hash covers. */
const HASHED_PREFIX = 96;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export class MessageMemo<T> {
  private young = new Map<number, Kept<T>>();
  private old = new Map<number, Kept<T>>();
  private youngBytes = 0;
  /** Per field of the item being looked at: start, end, hash of a map entry's key (0 for a non-map field). Reused. */
  private scratch = new Int32Array(3 * 32);
  /** Bit f set: field f is a map. */
  private readonly mapMask: number;
  /** Items answered with a kept message (tests, metrics). */
  hits = 0;
  /** Items decoded. */
  misses = 0;

  /**
   * `decode` turns one item's bytes into its message (frozen before it is
   * kept); `mapFields` are the numbers of the item's map fields (< 32).
   */
  constructor(
    private readonly decode: (bytes: Uint8Array) => T,
    mapFields: readonly number[],
    private readonly generationBytes = DEFAULT_GENERATION_BYTES,
  ) {
    this.mapMask = mapFields.reduce((m, f) => m | (1 << f), 0);
  }

  /** The message of `buf[start, end)`. */
  get(buf: Uint8Array, start: number, end: number): T {
    const n = this.scan(buf, start, end);
    if (n < 0) {
      // Not a shape the memo compares (groups, field numbers ≥ 32): decode it every time.
      this.misses++;
      return this.decode(buf.subarray(start, end));
    }
    // Found by its first bytes (an item's id comes first) and its size; compared in full.
    let key = Math.imul(FNV_OFFSET ^ (end - start), FNV_PRIME);
    const stop = Math.min(end, start + HASHED_PREFIX);
    for (let i = start; i < stop; i++) key = Math.imul(key ^ (buf[i] as number), FNV_PRIME);
    let kept = this.young.get(key);
    if (kept !== undefined && this.same(kept, buf, n, end - start)) {
      this.hits++;
      return kept.value;
    }
    kept = this.old.get(key);
    if (kept !== undefined && this.same(kept, buf, n, end - start)) {
      this.hits++;
      this.keep(key, kept);
      return kept.value;
    }
    this.misses++;
    const value = deepFreeze(this.decode(Buffer.from(buf.subarray(start, end))));
    const made = this.makeKept(buf, n, end - start, value);
    if (made !== undefined) this.keep(key, made);
    return value;
  }

  /** How many items are kept (both generations; an item in both counts twice). */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /**
   * Splits the item into ranges (scratch: start, end, and the hash of a map
   * entry's key): each map entry, and each run of other fields. The field count, or -1 when the item has a
   * group or a field number the mask cannot hold.
   */
  private scan(buf: Uint8Array, start: number, end: number): number {
    let pos = start;
    let n = 0;
    while (pos < end) {
      const fieldStart = pos;
      let payload = pos;
      let tag = 0;
      let shift = 0;
      let byte: number;
      do {
        if (pos >= end || shift > 28) return -1;
        byte = buf[pos++] as number;
        tag |= (byte & 0x7f) << shift;
        shift += 7;
      } while (byte & 0x80);
      const wire = tag & 7;
      const field = tag >>> 3;
      if (field >= 32) return -1;
      if (wire === 0) {
        do {
          if (pos >= end) return -1;
          byte = buf[pos++] as number;
        } while (byte & 0x80);
      } else if (wire === 1) pos += 8;
      else if (wire === 5) pos += 4;
      else if (wire === 2) {
        const r = readLength(buf, pos, end);
        if (r < 0) return -1;
        payload = pos + (r & 0xff);
        pos = payload + (r >>> 8);
      } else return -1;
      if (pos > end) return -1;
      if (3 * n + 3 > this.scratch.length) {
        const bigger = new Int32Array(this.scratch.length * 2);
        bigger.set(this.scratch);
        this.scratch = bigger;
      }
      const isMap = wire === 2 && (this.mapMask & (1 << field)) !== 0;
      if (!isMap && n > 0 && this.scratch[3 * n - 1] === 0) {
        // Adjacent non-map fields are one range (compared at once).
        this.scratch[3 * n - 2] = pos;
        continue;
      }
      this.scratch[3 * n] = fieldStart;
      this.scratch[3 * n + 1] = pos;
      // A key's hash is never 0 here, so 0 marks a non-map field.
      this.scratch[3 * n + 2] = isMap ? entryKeyHash(buf, payload, pos) : 0;
      n++;
    }
    return n;
  }

  /** The scanned item (n fields, `size` bytes) equals `kept`. */
  private same(kept: Kept<T>, buf: Uint8Array, n: number, size: number): boolean {
    if (kept.size !== size) return false;
    const s = this.scratch;
    let at = 0;
    let entries = 0;
    for (let i = 0; i < n; i++) {
      const a = s[3 * i] as number;
      const b = s[3 * i + 1] as number;
      const h = s[3 * i + 2] as number;
      if (h !== 0) {
        const e = kept.entries.get(h);
        if (e === undefined || !equalBytes(e, 0, buf, a, b)) return false;
        entries++;
      } else {
        if (!equalBytes(kept.fixed, at, buf, a, b)) return false;
        at += b - a;
      }
    }
    return at === kept.fixed.length && entries === kept.entries.size;
  }

  private makeKept(buf: Uint8Array, n: number, size: number, value: T): Kept<T> | undefined {
    const s = this.scratch;
    const entries = new Map<number, Buffer>();
    const fixedParts: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      const a = s[3 * i] as number;
      const b = s[3 * i + 1] as number;
      const h = s[3 * i + 2] as number;
      if (h === 0) fixedParts.push(buf.subarray(a, b));
      else if (entries.has(h)) return undefined; // two keys of one hash: not comparable as a set
      else entries.set(h, Buffer.from(buf.subarray(a, b)));
    }
    return { fixed: Buffer.concat(fixedParts), entries, size, value };
  }

  private keep(key: number, kept: Kept<T>): void {
    if (this.youngBytes + kept.size > this.generationBytes && this.young.size > 0) {
      this.old = this.young;
      this.young = new Map();
      this.youngBytes = 0;
    }
    const replaced = this.young.get(key);
    if (replaced !== undefined) this.youngBytes -= replaced.size;
    this.young.set(key, kept);
    this.youngBytes += kept.size;
  }
}

/**
 * The varint length at `buf[pos]`, packed as (length << 8) | its size in
 * bytes; -1 when it runs past `end` or past 2^23 (an item that long is not
 * kept).
 */
function readLength(buf: Uint8Array, pos: number, end: number): number {
  let len = 0;
  for (let i = 0; i < 4; i++) {
    if (pos + i >= end) return -1;
    const byte = buf[pos + i] as number;
    len |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return len < 1 << 23 ? (len << 8) | (i + 1) : -1;
  }
  return -1;
}

/**
 * FNV-1a of a map entry's key (`buf[a, b)` is the entry's payload: field 1,
 * the key, then field 2, the value), never 0. An entry of another shape is
 * hashed whole.
 */
function entryKeyHash(buf: Uint8Array, a: number, b: number): number {
  let from = a;
  let to = b;
  if (buf[a] === 0x0a) {
    const r = readLength(buf, a + 1, b);
    if (r >= 0) {
      from = a + 1 + (r & 0xff);
      to = Math.min(b, from + (r >>> 8));
    }
  }
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = Math.imul(h ^ (buf[i] as number), FNV_PRIME);
  return h === 0 ? 1 : h;
}

/** Ranges this long are compared natively; shorter ones in a loop (cheaper than the call). */
const NATIVE_COMPARE_BYTES = 64;

/** `x[at, at + (b - a))` equals `y[a, b)`. */
function equalBytes(x: Buffer, at: number, y: Uint8Array, a: number, b: number): boolean {
  if (at + (b - a) > x.length) return false;
  if (b - a >= NATIVE_COMPARE_BYTES) return x.compare(y, a, b, at, at + (b - a)) === 0;
  for (let i = a, j = at; i < b; i++, j++) if (x[j] !== y[i]) return false;
  return true;
}

/**
 * Decodes a list answer whose only field is `repeated Item items = 1` (CRI
 * ListContainersResponse, ListPodSandboxResponse), each item through `memo`.
 * Unknown fields are skipped, as the generated decoders skip them.
 */
export function decodeMemoList<T>(buf: Uint8Array, memo: MessageMemo<T>): T[] {
  const reader = new BinaryReader(buf);
  const items: T[] = [];
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === 10) {
      const len = reader.uint32();
      const start = reader.pos;
      const end = start + len;
      if (end > reader.len) throw new RangeError(`premature EOF: item of ${len} bytes at ${start} in ${reader.len}`);
      items.push(memo.get(buf, start, end));
      reader.pos = end;
      continue;
    }
    if ((tag & 7) === 4 || tag === 0) break;
    reader.skip(tag & 7);
  }
  return items;
}

/** Freezes `v` and every object and array in it (typed arrays cannot be frozen and are left as they are). */
export function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v) || Object.isFrozen(v)) return v;
  for (const key of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[key]);
  return Object.freeze(v);
}
