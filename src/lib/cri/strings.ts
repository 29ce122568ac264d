/**
 * Response decoding that reuses the strings of earlier responses.
 *
 * `klet sync` lists every sandbox and container once a second (the PLEG
 * relist), and nearly every string in those lists (IDs, names, label and
 * annotation keys and values) is the one it decoded a second ago. The
 * protobuf reader allocates each of them anew: with 110 pods that was 1 MB
 * a second, about half of all `klet sync` allocated, and the garbage
 * collector's work follows the allocations. StringTable keeps the strings
 * it decoded recently, by a hash of their bytes, and InterningReader
 * returns the kept string when the bytes match, allocating nothing.
 *
 * Only ASCII strings up to MAX_INTERNED_BYTES are kept (the ones that
 * repeat; compared byte for byte, so a hash collision costs a decode, never
 * a wrong string). The table holds two generations of at most
 * `generationSize` strings each: a string not seen for two generations is
 * dropped, so it never grows past 2 × generationSize × MAX_INTERNED_BYTES.
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';

/** Longer strings (a pod's last-applied-configuration) are decoded every time. */
export const MAX_INTERNED_BYTES = 256;

export class StringTable {
  private young = new Map<number, string>();
  private old = new Map<number, string>();
  /** Strings returned without decoding (tests, metrics). */
  hits = 0;
  /** Strings decoded and kept. */
  misses = 0;

  constructor(private readonly generationSize = 8192) {}

  /** The kept string equal to `bytes[start, start+len)` (ASCII, hashed to `hash`), if any. */
  find(hash: number, bytes: Uint8Array, start: number, len: number): string | undefined {
    let s = this.young.get(hash);
    if (s !== undefined && sameAscii(s, bytes, start, len)) {
      this.hits++;
      return s;
    }
    s = this.old.get(hash);
    if (s !== undefined && sameAscii(s, bytes, start, len)) {
      this.hits++;
      this.keep(hash, s);
      return s;
    }
    return undefined;
  }

  keep(hash: number, s: string): void {
    if (this.young.size >= this.generationSize) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(hash, s);
  }

  /** How many strings are kept (both generations; a string in both counts twice). */
  get size(): number {
    return this.young.size + this.old.size;
  }
}

/** FNV-1a of `bytes[start, end)`, or undefined when a byte is not ASCII (such strings are not kept). */
export function asciiHash(bytes: Uint8Array, start: number, end: number): number | undefined {
  let h = 0x811c9dc5;
  let high = 0;
  for (let i = start; i < end; i++) {
    const c = bytes[i] as number;
    high |= c;
    h = Math.imul(h ^ c, 0x01000193);
  }
  return high > 0x7f ? undefined : h;
}

function sameAscii(s: string, bytes: Uint8Array, start: number, len: number): boolean {
  if (s.length !== len) return false;
  for (let i = 0; i < len; i++) if (s.charCodeAt(i) !== bytes[start + i]) return false;
  return true;
}

/** A BinaryReader whose string() returns strings kept in `table` when the bytes match. */
export class InterningReader extends BinaryReader {
  private readonly data: Uint8Array;

  constructor(
    buf: Uint8Array,
    private readonly table: StringTable,
  ) {
    super(buf);
    this.data = buf;
  }

  override string(strict?: boolean): string {
    const at = this.pos;
    const len = this.uint32();
    const start = this.pos;
    const end = start + len;
    if (len === 0 || len > MAX_INTERNED_BYTES || end > this.len) {
      this.pos = at;
      return super.string(strict); // the reader's own bounds check and error
    }
    const b = this.data;
    const h = asciiHash(b, start, end);
    if (h === undefined) {
      this.pos = at;
      return super.string(strict);
    }
    const kept = this.table.find(h, b, start, len);
    if (kept !== undefined) {
      this.pos = end;
      return kept;
    }
    this.pos = at;
    const s = super.string(strict);
    this.table.misses++;
    this.table.keep(h, s);
    return s;
  }
}
