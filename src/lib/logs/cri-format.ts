/**
 * The CRI container log format, as containerd and CRI-O write it and the
 * kubelet reads it (pkg/kubelet/kuberuntime/logs):
 *
 *     2016-10-06T00:17:09.669794202Z stdout F The content of the log entry 1
 *     2016-10-06T00:17:09.669794203Z stderr P First part of a long line,
 *     2016-10-06T00:17:09.669794204Z stderr F  and the rest of it
 *
 * `<RFC3339Nano timestamp> <stdout|stderr> <tags> <content>`. The first
 * colon-separated tag is `P` (partial: the runtime split a long line, or the
 * process has not written its newline yet) or `F` (full: this part ends the
 * line). Later tags are reserved, so they are accepted and kept, as the
 * kubelet does for forward compatibility.
 *
 * Parsing works on bytes because the runtime splits long lines at a byte
 * count, which may fall inside a multi-byte UTF-8 character: parts must be
 * joined before they are decoded.
 */

export type CriStream = 'stdout' | 'stderr';

export interface CriLogEntry {
  /** The timestamp exactly as the runtime wrote it. */
  timestamp: string;
  /** The timestamp as a Date (millisecond precision). */
  time: Date;
  /** Nanoseconds within the second (0..999999999): the precision Date drops. */
  nanos: number;
  stream: CriStream;
  /** True for a `P` part, which continues in the next part of the same stream. */
  partial: boolean;
  /** All tags, `P` or `F` first. */
  tags: string[];
  /** The content, without the line's newline. */
  message: string;
}

/** A parsed line whose content is still bytes (see the module comment). */
export interface CriLogRecord extends Omit<CriLogEntry, 'message'> {
  content: Buffer;
}

const SPACE = 0x20;
const NEWLINE = 0x0a;
const COLON = 0x3a;
const TAG_P = 0x50;
const TAG_F = 0x46;

/** Whether bytes [start, end) of `buf` are exactly the ASCII string `text`. */
function asciiAt(buf: Buffer, start: number, end: number, text: string): boolean {
  if (end - start !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (buf[start + i] !== text.charCodeAt(i)) return false;
  return true;
}

export interface ParsedTime {
  time: Date;
  nanos: number;
}

interface TimestampParts {
  /** Milliseconds since the epoch. */
  ms: number;
  nanos: number;
  /** Index of the zone: `Z`, or the sign of `±HH:MM`. */
  zoneStart: number;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** The fixed-width part of a timestamp; `9` stands for any digit. */
const DATE_TIME_SHAPE = '9999-99-99T99:99:99';
const DIGIT = 0x39;
const DOT = 0x2e;

/**
 * Scan `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, the shape Go's
 * time.RFC3339Nano parses, by hand: this runs once per log line, and a
 * regular expression plus Date arithmetic made it the reader's hot spot.
 * Go accepts any number of fraction digits; beyond nine they are below the
 * resolution of time.Time, so they are ignored here too.
 */
function scanTimestamp(t: string): TimestampParts | null {
  const n = t.length;
  if (n < 20) return null;
  for (let i = 0; i < 19; i++) {
    const c = t.charCodeAt(i);
    const want = DATE_TIME_SHAPE.charCodeAt(i);
    if (want === DIGIT ? c < 48 || c > 57 : c !== want) return null;
  }
  const year = two(t, 0) * 100 + two(t, 2);
  const month = two(t, 5);
  const day = two(t, 8);
  const hour = two(t, 11);
  const minute = two(t, 14);
  const second = two(t, 17);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] as number))) return null;

  let i = 19;
  let nanos = 0;
  if (t.charCodeAt(i) === DOT) {
    i++;
    let digits = 0;
    for (let c = t.charCodeAt(i); c >= 48 && c <= 57; c = t.charCodeAt(++i)) {
      if (digits < 9) nanos = nanos * 10 + (c - 48);
      digits++;
    }
    if (digits === 0) return null;
    for (; digits < 9; digits++) nanos *= 10;
  }
  const zoneStart = i;
  let offsetMin = 0;
  const z = t[i];
  if (z === 'Z') {
    if (i + 1 !== n) return null;
  } else if ((z === '+' || z === '-') && i + 6 === n && t[i + 3] === ':') {
    for (const k of [1, 2, 4, 5]) {
      const c = t.charCodeAt(i + k);
      if (c < 48 || c > 57) return null;
    }
    const oh = two(t, i + 1);
    const om = two(t, i + 4);
    if (oh > 23 || om > 59) return null;
    offsetMin = (z === '-' ? -1 : 1) * (oh * 60 + om);
  } else {
    return null;
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMin * 60;
  return { ms: seconds * 1000 + Math.floor(nanos / 1e6), nanos, zoneStart };
}

/** The two-digit number at `i` (digits already checked). */
function two(t: string, i: number): number {
  return (t.charCodeAt(i) - 48) * 10 + t.charCodeAt(i + 1) - 48;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (month + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** Parse an RFC 3339 timestamp with up to nanosecond precision; null if invalid. */
export function parseRfc3339Nano(text: string): ParsedTime | null {
  const p = scanTimestamp(text);
  return p === null ? null : { time: new Date(p.ms), nanos: p.nanos };
}

/**
 * The kubelet's output timestamp format (RFC3339NanoFixed: always nine
 * fraction digits, so timestamps line up), keeping the offset the runtime
 * wrote. `+00:00` prints as `Z`, as Go's formatter does. Anything that is
 * not a timestamp is returned as it is.
 */
export function formatCriTimestamp(timestamp: string): string {
  const p = scanTimestamp(timestamp);
  if (p === null) return timestamp;
  const zone = timestamp.slice(p.zoneStart);
  const fixed = zone === '+00:00' || zone === '-00:00' ? 'Z' : zone;
  return `${timestamp.slice(0, 19)}.${String(p.nanos).padStart(9, '0')}${fixed}`;
}

/**
 * Parse one line (its trailing newline optional) into a record whose content
 * stays bytes. Null when the line is not in the CRI format; never throws.
 */
export function parseCriLogBytes(line: Buffer): CriLogRecord | null {
  let end = line.length;
  if (end > 0 && line[end - 1] === NEWLINE) end--;
  const s1 = line.indexOf(SPACE);
  if (s1 <= 0 || s1 >= end) return null;
  const s2 = line.indexOf(SPACE, s1 + 1);
  if (s2 < 0 || s2 >= end) return null;
  const s3 = line.indexOf(SPACE, s2 + 1);
  if (s3 < 0 || s3 >= end) return null;

  // Byte comparisons first: this runs for every line of a log.
  let stream: CriStream;
  if (asciiAt(line, s1 + 1, s2, 'stdout')) stream = 'stdout';
  else if (asciiAt(line, s1 + 1, s2, 'stderr')) stream = 'stderr';
  else return null;
  const tag = line[s2 + 1];
  if ((tag !== TAG_P && tag !== TAG_F) || (s3 !== s2 + 2 && line[s2 + 2] !== COLON)) return null;
  const tags = s3 === s2 + 2 ? [tag === TAG_P ? 'P' : 'F'] : line.toString('latin1', s2 + 1, s3).split(':');
  const timestamp = line.toString('latin1', 0, s1);
  const parsed = scanTimestamp(timestamp);
  if (parsed === null) return null;
  return {
    timestamp,
    time: new Date(parsed.ms),
    nanos: parsed.nanos,
    stream,
    partial: tag === TAG_P,
    tags,
    content: line.subarray(s3 + 1, end),
  };
}

/**
 * Parse one line of a CRI log file (its trailing newline optional). Returns
 * null for anything malformed (bad timestamp, unknown stream, unknown first
 * tag, missing fields); never throws, so a reader can skip garbage the way
 * the kubelet does.
 */
export function parseCriLogLine(line: string): CriLogEntry | null {
  const rec = parseCriLogBytes(Buffer.from(line, 'utf8'));
  if (rec === null) return null;
  const { content, ...rest } = rec;
  return { ...rest, message: content.toString('utf8') };
}
