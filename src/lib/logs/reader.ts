/**
 * Reading a container's CRI log file the way the kubelet serves
 * `kubectl logs` (pkg/kubelet/kuberuntime/logs/logs.go ReadLogs): select a
 * stream, start N lines from the end, drop lines before a time, prefix
 * timestamps, cap the output size, and optionally follow the file.
 *
 * Differences from the kubelet, all deliberate:
 * - Partial (`P`) parts are joined per stream before anything else, so a
 *   long line is one output line with one timestamp (its first part's), and
 *   `tail` counts finished lines rather than raw file lines. An interleaved
 *   line of the other stream does not break a join.
 * - `tail` is counted among the lines of the selected stream(s), so
 *   `{ stream: 'stderr', tail: 5 }` gives the last five stderr lines.
 * - Following has no container runtime to ask whether the container still
 *   runs; the caller passes `isRunning` for that, or aborts `signal`.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import { readSync, watch, type FSWatcher } from 'node:fs';
import { NotFoundError } from '../errors.js';
import { formatCriTimestamp, parseCriLogBytes, type CriLogRecord, type CriStream } from './cri-format.js';

export interface ReadContainerLogOptions {
  /**
   * Keep reading data appended to the file until `signal` aborts or
   * `isRunning` reports the container gone. A container restart writes a new
   * `N+1.log` file that this reader does not switch to: a follower that
   * wants to continue across restarts resolves latestLogFile() again when
   * this generator ends. Log rotation (the file renamed and recreated under
   * the same name) and truncation in place are followed.
   */
  follow?: boolean;
  /** Finished lines to show from the end; -1 (the default) for all, 0 for none. */
  tail?: number;
  /** Prefix each line with its RFC3339Nano timestamp (nine fraction digits) and a space. */
  timestamps?: boolean;
  /** Only lines whose (first part's) timestamp is at or after this time. */
  since?: Date;
  /** Which stream to show; both by default. */
  stream?: 'stdout' | 'stderr' | 'all';
  /** Aborting ends the generator (normally, without an error). */
  signal?: AbortSignal;
  /**
   * Stop after this many bytes of output (timestamps included), cutting the
   * last line at a character boundary. Zero or less means no limit, as
   * kubectl's --limit-bytes=0 does.
   */
  limitBytes?: number;
  /**
   * While following: asked every four poll intervals (1 s by default) while
   * the file is idle. When it answers false the reader reads what is left,
   * prints an unfinished last line, and ends: the container exited and
   * nothing more will come.
   */
  isRunning?: () => boolean | Promise<boolean>;
  /**
   * End an unfinished last line (only `P` parts, the container wrote no
   * newline) with a newline (the default, for a terminal) or leave it as
   * written, as the kubelet's ReadLogs does (kubectl logs, termination messages).
   */
  unfinishedNewline?: boolean;
  /** While following: how often to look at the file if fs.watch stays silent, in ms (default 250). */
  pollInterval?: number;
}

/** Bytes read per step, forwards and backwards. */
const CHUNK_BYTES = 64 * 1024;
/**
 * Longer raw lines are skipped as garbage instead of buffered. containerd
 * and CRI-O split lines at 16 KiB by default; only a runtime configured for
 * unlimited lines writes longer ones.
 */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** How far before the tail window to look for the first parts of its lines. */
const TAIL_JOIN_SCAN_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;
/** While following, ask isRunning after this many idle poll intervals (1 s by default). */
const IDLE_CHECK_POLLS = 4;

interface RawLine {
  /** File offset of the line's first byte. */
  offset: number;
  /** The line without its newline, or null when it was too long to keep. */
  line: Buffer | null;
}

/**
 * Read and format a container's log file. Yields one string per log line:
 * the line's content (partial parts joined), a newline, and with
 * `timestamps` a timestamp and a space in front.
 *
 * Malformed lines are skipped, as the kubelet skips them. When the reading
 * ends (no `follow`, or `isRunning` said the container is gone), a last line
 * still unfinished (only `P` parts so far) is printed with a newline added,
 * where the kubelet prints it without one. An unterminated trailing write
 * (no newline yet) is left alone: the runtime is in the middle of it.
 *
 * `tail` reads the file backwards from the end in 64 KiB steps, so it costs
 * the size of the lines shown, not of the file.
 *
 * @throws NotFoundError when the file does not exist.
 */
export async function* readContainerLog(file: string, opts: ReadContainerLogOptions = {}): AsyncGenerator<string> {
  const { signal } = opts;
  // A function, not a narrowed property: the signal changes under awaits.
  const aborted = (): boolean => signal?.aborted === true;
  if (aborted()) return;
  const wanted = wantedStreams(opts.stream ?? 'all');
  const tail = opts.tail === undefined || opts.tail < 0 ? -1 : Math.floor(opts.tail);
  const pollInterval = Math.max(10, opts.pollInterval ?? 250);
  const output = new OutputLimit(opts.limitBytes);

  let fh = await openLog(file);
  const waiter = new ChangeWaiter();
  try {
    const size = (await fh.stat()).size;
    const window = tail < 0 ? { start: 0, emitFrom: 0 } : await findTailStart(fh, size, tail, wanted);
    const assembler = new LineAssembler(wanted, window.emitFrom, opts.since, opts.timestamps === true, opts.unfinishedNewline !== false);
    const reader = new LineReader(window.start);

    // Reads to the current end of the file, yielding formatted lines.
    // Returns false when output must stop: limit reached or aborted.
    let following = false;
    const drain = async function* (): AsyncGenerator<string, boolean> {
      let lines: RawLine[] | null;
      // Following, a wake-up's first chunk is read inline (LineReader.readNow); the rest of a burst
      // through the thread pool, so the event loop still turns between 64 KiB chunks.
      let inline = following;
      while ((lines = inline ? reader.readNow(fh) : await reader.read(fh)) !== null) {
        inline = false;
        for (const raw of lines) {
          const text = assembler.push(raw);
          if (text === null) continue;
          const cut = output.take(text);
          if (cut !== '') yield cut;
          if (output.exhausted) return false;
        }
        if (aborted()) return false;
      }
      return true;
    };
    const finish = function* (): Generator<string> {
      for (const text of assembler.flush()) {
        const cut = output.take(text);
        if (cut !== '') yield cut;
        if (output.exhausted) return;
      }
    };

    if (!(yield* drain())) return;
    if (opts.follow !== true) {
      yield* finish();
      return;
    }

    following = true;
    waiter.watch(file);
    let lastActivity = Date.now();
    let lastRunningCheck = 0;
    const idleCheck = IDLE_CHECK_POLLS * pollInterval;
    while (!aborted()) {
      await waiter.wait(pollInterval, signal);
      if (aborted()) return;
      const before = reader.position;
      if (!(yield* drain())) return;
      if (reader.position !== before) {
        lastActivity = Date.now();
        continue;
      }

      // Idle: was the file rotated (renamed and recreated) or truncated?
      const current = await fh.stat();
      const onDisk = await stat(file).catch(() => null);
      if (onDisk !== null && (onDisk.ino !== current.ino || onDisk.dev !== current.dev)) {
        // The runtime may have written to the old file after our last read
        // and before it reopened the new one.
        if (!(yield* drain())) return;
        const next = await openLog(file).catch(() => null);
        if (next !== null) {
          await fh.close();
          fh = next;
          reader.reset(0);
          assembler.emitFrom = 0;
          waiter.watch(file);
          continue;
        }
      } else if (current.size < reader.position) {
        reader.reset(0);
        assembler.emitFrom = 0;
        continue;
      }

      const now = Date.now();
      if (opts.isRunning !== undefined && now - lastActivity >= idleCheck && now - lastRunningCheck >= idleCheck) {
        lastRunningCheck = now;
        if (!(await opts.isRunning())) {
          if (!(yield* drain())) return;
          yield* finish();
          return;
        }
      }
    }
  } finally {
    waiter.close();
    await fh.close();
  }
}

function wantedStreams(stream: 'stdout' | 'stderr' | 'all'): ReadonlySet<CriStream> {
  return new Set<CriStream>(stream === 'all' ? ['stdout', 'stderr'] : [stream]);
}

async function openLog(file: string): Promise<FileHandle> {
  try {
    return await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new NotFoundError(`container log ${file}: no such file`, { cause: err });
    }
    throw err;
  }
}

/**
 * Joins partial parts per stream and decides which finished lines are
 * shown. The rule that makes `tail` and `follow` agree: a line is shown when
 * its finishing `F` part is at or after `emitFrom` in the file (a line still
 * unfinished at the end: when its first part is).
 */
class LineAssembler {
  private readonly pending = new Map<CriStream, { first: CriLogRecord; offset: number; parts: Buffer[] }>();

  constructor(
    private readonly wanted: ReadonlySet<CriStream>,
    public emitFrom: number,
    private readonly since: Date | undefined,
    private readonly timestamps: boolean,
    private readonly unfinishedNewline: boolean,
  ) {}

  /** Feed one raw line; returns the formatted output line it finishes, if shown. */
  push(raw: RawLine): string | null {
    if (raw.line === null) return null;
    const rec = parseCriLogBytes(raw.line);
    if (rec === null || !this.wanted.has(rec.stream)) return null;
    // Parts point into the reader's chunk, which is never reused, so
    // keeping them until the line finishes is safe.
    const open = this.pending.get(rec.stream);
    if (rec.partial) {
      if (open === undefined) this.pending.set(rec.stream, { first: rec, offset: raw.offset, parts: [rec.content] });
      else open.parts.push(rec.content);
      return null;
    }
    this.pending.delete(rec.stream);
    if (raw.offset < this.emitFrom) return null;
    const first = open?.first ?? rec;
    const content = open === undefined ? rec.content : Buffer.concat([...open.parts, rec.content]);
    return this.format(first, content);
  }

  /** Unfinished lines, in file order, for the end of a read. */
  flush(): string[] {
    const open = [...this.pending.values()].sort((a, b) => a.offset - b.offset);
    this.pending.clear();
    return open
      .filter((p) => p.offset >= this.emitFrom)
      .map((p) => this.format(p.first, Buffer.concat(p.parts), this.unfinishedNewline))
      .filter((text): text is string => text !== null);
  }

  private format(first: CriLogRecord, content: Buffer, newline = true): string | null {
    if (this.since !== undefined && first.time.getTime() < this.since.getTime()) return null;
    const text = content.toString('utf8') + (newline ? '\n' : '');
    return this.timestamps ? `${formatCriTimestamp(first.timestamp)} ${text}` : text;
  }
}

/** Forward reader: complete (newline-terminated) lines from a position on. */
class LineReader {
  private carry: Buffer[] = [];
  private carryBytes = 0;
  private carryStart = 0;
  private skipping = false;

  constructor(public position: number) {
    this.carryStart = position;
  }

  reset(position: number): void {
    this.position = position;
    this.carry = [];
    this.carryBytes = 0;
    this.carryStart = position;
    this.skipping = false;
  }

  /** The complete lines of the next chunk; null at end of file. */
  async read(fh: FileHandle): Promise<RawLine[] | null> {
    // A fresh buffer per chunk: lines (and partial parts kept by the
    // assembler) are views into it.
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    const { bytesRead } = await fh.read(chunk, 0, CHUNK_BYTES, this.position);
    return this.split(chunk, bytesRead);
  }

  /**
   * read(), on the calling thread. Following a file, what a change wakes is
   * the few bytes just written, in the page cache: a read there takes
   * microseconds, where the thread pool's round trip of fh.read added a
   * wake-up of a worker thread and of the event loop to every line's
   * latency (bench/README, kubelet-api logs -f). The kubelet reads
   * inline too.
   */
  readNow(fh: FileHandle): RawLine[] | null {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    return this.split(chunk, readSync(fh.fd, chunk, 0, CHUNK_BYTES, this.position));
  }

  private split(chunk: Buffer, bytesRead: number): RawLine[] | null {
    if (bytesRead === 0) return null;
    const data = chunk.subarray(0, bytesRead);
    const base = this.position;
    this.position += bytesRead;
    const lines: RawLine[] = [];
    let from = 0;
    for (let nl = data.indexOf(NEWLINE, 0); nl >= 0; nl = data.indexOf(NEWLINE, from)) {
      if (this.skipping) {
        lines.push({ offset: this.carryStart, line: null });
        this.skipping = false;
      } else if (this.carryBytes > 0) {
        lines.push({ offset: this.carryStart, line: Buffer.concat([...this.carry, data.subarray(from, nl)]) });
      } else {
        lines.push({ offset: base + from, line: data.subarray(from, nl) });
      }
      this.carry = [];
      this.carryBytes = 0;
      from = nl + 1;
      this.carryStart = base + from;
    }
    if (from < bytesRead && !this.skipping) {
      this.carry.push(data.subarray(from, bytesRead));
      this.carryBytes += bytesRead - from;
      if (this.carryBytes > MAX_LINE_BYTES) {
        this.carry = [];
        this.carryBytes = 0;
        this.skipping = true;
      }
    }
    return lines;
  }
}

/**
 * Complete lines from `end` backwards, last first. A trailing unterminated
 * write is skipped. Memory stays bounded by one chunk plus one line: a line
 * longer than MAX_LINE_BYTES is reported with `line: null`.
 */
async function* reverseLines(
  fh: FileHandle,
  end: number,
  bounds: { floor: number } = { floor: 0 },
): AsyncGenerator<RawLine & { end: number }> {
  // `end` of a yielded line is the offset just past its newline. The caller
  // may raise `bounds.floor` while iterating: nothing before it is read.
  let pos = end;
  let rest: Buffer | null = null; // the end of a line whose start is before `pos`, newline included
  let oversized = -1; // end offset of a too-long line whose start is before `pos`, or -1
  let trailing = true; // still skipping the unterminated trailing write
  while (pos > bounds.floor) {
    const start = Math.max(0, pos - CHUNK_BYTES);
    const chunk = Buffer.allocUnsafe(pos - start);
    await readFully(fh, chunk, start);
    pos = start;

    let buf: Buffer;
    if (trailing || oversized >= 0) {
      const k = chunk.lastIndexOf(NEWLINE);
      if (k < 0) {
        if (oversized >= 0 && start === 0) yield { offset: 0, end: oversized, line: null };
        continue;
      }
      if (oversized >= 0) yield { offset: start + k + 1, end: oversized, line: null };
      trailing = false;
      oversized = -1;
      buf = chunk.subarray(0, k + 1);
    } else {
      buf = rest === null ? chunk : Buffer.concat([chunk, rest]);
    }
    rest = null;

    // buf covers [start, start + buf.length) and ends with a newline at j.
    let j = buf.length - 1;
    for (;;) {
      const k = j > 0 ? buf.lastIndexOf(NEWLINE, j - 1) : -1;
      if (k >= 0) {
        yield { offset: start + k + 1, end: start + j + 1, line: buf.subarray(k + 1, j) };
        j = k;
        continue;
      }
      if (start === 0) {
        yield { offset: 0, end: j + 1, line: buf.subarray(0, j) };
        return;
      }
      if (j + 1 > MAX_LINE_BYTES) oversized = start + j + 1;
      else rest = buf.subarray(0, j + 1);
      break;
    }
  }
}

async function readFully(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, position + done);
    if (bytesRead === 0) {
      buf.fill(0, done); // the file shrank under us: NULs parse as garbage, never as lines
      return;
    }
    done += bytesRead;
  }
}

/**
 * Where to start reading for `tail` finished lines, found from the end:
 * `emitFrom` is the offset of the tail-th last finishing part, and `start`
 * goes further back to the first partial parts of lines that finish in the
 * window (another stream's lines may sit between a line's parts). That
 * look-back is bounded, so a stream that never finishes a line cannot make
 * `tail` read the whole file.
 */
async function findTailStart(
  fh: FileHandle,
  size: number,
  tail: number,
  wanted: ReadonlySet<CriStream>,
): Promise<{ start: number; emitFrom: number }> {
  let count = 0;
  let emitFrom: number | null = null;
  let start = 0;
  const open = new Set(wanted);
  const bounds = { floor: 0 };
  for await (const raw of reverseLines(fh, size, bounds)) {
    if (emitFrom === null && tail === 0) {
      // Nothing old is shown; lines finishing from here on are.
      emitFrom = raw.end;
      start = emitFrom;
      bounds.floor = Math.max(0, emitFrom - TAIL_JOIN_SCAN_BYTES);
    }
    const rec = raw.line === null ? null : parseCriLogBytes(raw.line);
    if (emitFrom === null) {
      if (rec !== null && wanted.has(rec.stream) && !rec.partial && ++count === tail) {
        emitFrom = raw.offset;
        start = raw.offset;
        bounds.floor = Math.max(0, emitFrom - TAIL_JOIN_SCAN_BYTES);
      }
      continue;
    }
    if (rec === null || !open.has(rec.stream)) continue;
    if (rec.partial) start = raw.offset;
    else open.delete(rec.stream);
    if (open.size === 0) break;
  }
  return emitFrom === null ? { start: 0, emitFrom: 0 } : { start, emitFrom };
}

/** The limitBytes budget. */
class OutputLimit {
  private left: number;

  constructor(limit: number | undefined) {
    this.left = limit !== undefined && limit > 0 ? limit : Infinity;
  }

  get exhausted(): boolean {
    return this.left <= 0;
  }

  /** The part of `text` that fits, cut at a UTF-8 character boundary. */
  take(text: string): string {
    if (this.left === Infinity) return text;
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length <= this.left) {
      this.left -= bytes.length;
      return text;
    }
    let n = this.left;
    while (n > 0 && ((bytes[n] as number) & 0xc0) === 0x80) n--;
    this.left = 0;
    return bytes.toString('utf8', 0, n);
  }
}

/**
 * Wakes a follower when the file changes (fs.watch), or after a poll
 * interval anyway: fs.watch is best-effort (it misses events on some
 * filesystems and cannot be set up on others), polling is the floor.
 */
class ChangeWaiter {
  private watcher: FSWatcher | undefined;
  private changed = false;
  private wake: (() => void) | undefined;

  watch(file: string): void {
    this.close();
    try {
      const w = watch(file, { persistent: false }, () => this.poke());
      w.on('error', () => {
        w.close();
        if (this.watcher === w) this.watcher = undefined;
      });
      this.watcher = w;
    } catch {
      // Polling alone.
    }
  }

  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.changed) {
      this.changed = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wake = undefined;
        this.changed = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private poke(): void {
    this.changed = true;
    this.wake?.();
  }
}
