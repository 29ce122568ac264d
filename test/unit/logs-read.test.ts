import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { appendFile, mkdtemp, open, rename, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NotFoundError } from '../../src/lib/errors.js';
import { readContainerLog, type ReadContainerLogOptions } from '../../src/lib/logs/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'klet-logs-'));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

/** One CRI log line; `sec` picks the timestamp 2024-05-01T10:00:<sec>.123456789Z. */
function cri(sec: number, stream: 'stdout' | 'stderr', tag: 'P' | 'F', msg: string): string {
  const s = String(sec).padStart(2, '0');
  return `2024-05-01T10:00:${s}.123456789Z ${stream} ${tag} ${msg}\n`;
}

async function logFile(content: string | Buffer): Promise<string> {
  const file = path.join(dir, '0.log');
  await writeFile(file, content);
  return file;
}

async function readAll(file: string, opts: ReadContainerLogOptions = {}): Promise<string[]> {
  const out: string[] = [];
  for await (const chunk of readContainerLog(file, opts)) out.push(chunk);
  return out;
}

describe('readContainerLog', () => {
  it('joins partial parts and keeps both streams in order', async () => {
    const file = await logFile(
      cri(1, 'stdout', 'F', 'one') +
        cri(2, 'stdout', 'P', 'long ') +
        cri(2, 'stdout', 'P', 'line ') +
        cri(3, 'stdout', 'F', 'ends') +
        cri(4, 'stderr', 'F', 'oops') +
        cri(5, 'stdout', 'F', ''),
    );
    expect(await readAll(file)).toEqual(['one\n', 'long line ends\n', 'oops\n', '\n']);
  });

  it('joins per stream when the other stream interleaves', async () => {
    const file = await logFile(
      cri(1, 'stdout', 'P', 'a') + cri(2, 'stderr', 'F', 'err') + cri(3, 'stdout', 'F', 'b'),
    );
    expect(await readAll(file)).toEqual(['err\n', 'ab\n']);
  });

  it('joins a multi-byte character split between parts', async () => {
    const euro = Buffer.from('€', 'utf8'); // 3 bytes
    const line = (tag: string, body: Buffer): Buffer =>
      Buffer.concat([Buffer.from(`2024-05-01T10:00:00Z stdout ${tag} `), body, Buffer.from('\n')]);
    const file = await logFile(Buffer.concat([line('P', euro.subarray(0, 1)), line('F', euro.subarray(1))]));
    expect(await readAll(file)).toEqual(['€\n']);
  });

  it('filters by stream', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'out') + cri(2, 'stderr', 'F', 'err'));
    expect(await readAll(file, { stream: 'stderr' })).toEqual(['err\n']);
    expect(await readAll(file, { stream: 'stdout' })).toEqual(['out\n']);
    expect(await readAll(file, { stream: 'all' })).toEqual(['out\n', 'err\n']);
  });

  it('skips malformed lines', async () => {
    const file = await logFile(
      cri(1, 'stdout', 'F', 'good') + 'not a log line\n' + '\n' + '2024-05-01T10:00:02Z stdin F x\n' + cri(3, 'stdout', 'F', 'also good'),
    );
    expect(await readAll(file)).toEqual(['good\n', 'also good\n']);
  });

  it('prefixes fixed-width timestamps, the first part\'s for a joined line', async () => {
    const file = await logFile(
      '2024-05-01T10:00:01.5Z stdout P a\n' + cri(2, 'stdout', 'F', 'b') + '2024-05-01T12:00:03+02:00 stderr F c\n',
    );
    expect(await readAll(file, { timestamps: true })).toEqual([
      '2024-05-01T10:00:01.500000000Z ab\n',
      '2024-05-01T12:00:03.000000000+02:00 c\n',
    ]);
  });

  it('drops lines before since', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'old') + cri(5, 'stdout', 'F', 'new') + cri(9, 'stdout', 'F', 'newer'));
    const since = new Date('2024-05-01T10:00:05.123Z'); // equal to the second line, to the millisecond
    expect(await readAll(file, { since })).toEqual(['new\n', 'newer\n']);
  });

  it('prints an unfinished last line but not an unterminated write', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'done') + cri(2, 'stdout', 'P', 'half') + '2024-05-01T10:00:03Z stdout F tr');
    expect(await readAll(file)).toEqual(['done\n', 'half\n']);
    // As the kubelet serves it (kubectl logs, a termination message from the log): left as written.
    expect(await readAll(file, { unfinishedNewline: false })).toEqual(['done\n', 'half']);
  });

  it('stops at limitBytes, at a character boundary', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'hello') + cri(2, 'stdout', 'F', 'wörld') + cri(3, 'stdout', 'F', 'more'));
    expect((await readAll(file, { limitBytes: 8 })).join('')).toBe('hello\nw');
    expect((await readAll(file, { limitBytes: 7 })).join('')).toBe('hello\nw');
    expect((await readAll(file, { limitBytes: 10 })).join('')).toBe('hello\nwör');
    expect((await readAll(file, { limitBytes: 0 })).join('')).toBe('hello\nwörld\nmore\n');
  });

  it('throws NotFoundError for a missing file', async () => {
    await expect(readAll(path.join(dir, 'nope.log'))).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('readContainerLog tail', () => {
  it('counts finished lines, joining parts before the window', async () => {
    const file = await logFile(
      cri(1, 'stdout', 'F', 'l1') +
        cri(2, 'stdout', 'P', 'l2a ') +
        cri(3, 'stdout', 'P', 'l2b ') +
        cri(4, 'stdout', 'F', 'l2c') +
        cri(5, 'stdout', 'F', 'l3'),
    );
    expect(await readAll(file, { tail: 1 })).toEqual(['l3\n']);
    expect(await readAll(file, { tail: 2 })).toEqual(['l2a l2b l2c\n', 'l3\n']);
    expect(await readAll(file, { tail: 3 })).toEqual(['l1\n', 'l2a l2b l2c\n', 'l3\n']);
    expect(await readAll(file, { tail: 100 })).toEqual(['l1\n', 'l2a l2b l2c\n', 'l3\n']);
    expect(await readAll(file, { tail: 0 })).toEqual([]);
    expect(await readAll(file, { tail: -1 })).toHaveLength(3);
  });

  it('joins parts that sit before another stream\'s lines', async () => {
    const file = await logFile(
      cri(1, 'stdout', 'F', 'before') + cri(2, 'stdout', 'P', 'a') + cri(3, 'stderr', 'F', 'err') + cri(4, 'stdout', 'F', 'b'),
    );
    expect(await readAll(file, { tail: 1 })).toEqual(['ab\n']);
    expect(await readAll(file, { tail: 2 })).toEqual(['err\n', 'ab\n']);
  });

  it('counts only the selected stream', async () => {
    const file = await logFile(
      cri(1, 'stderr', 'F', 'e1') + cri(2, 'stdout', 'F', 'o1') + cri(3, 'stderr', 'F', 'e2') + cri(4, 'stdout', 'F', 'o2'),
    );
    expect(await readAll(file, { tail: 2, stream: 'stderr' })).toEqual(['e1\n', 'e2\n']);
  });

  it('ignores an unterminated trailing write and combines with since', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'a') + cri(2, 'stdout', 'F', 'b') + cri(3, 'stdout', 'F', 'c') + '2024-05-01T10:00:04Z std');
    expect(await readAll(file, { tail: 2 })).toEqual(['b\n', 'c\n']);
    expect(await readAll(file, { tail: 2, since: new Date('2024-05-01T10:00:03Z') })).toEqual(['c\n']);
  });

  it('reads only the end of a multi-MB file', async () => {
    const lines: string[] = [];
    const total = 60_000; // about 4.5 MB
    for (let i = 0; i < total; i++) {
      // Every 7th line is split in two parts, some with an interleaved stderr line.
      if (i % 7 === 0) {
        lines.push(cri(i % 60, 'stdout', 'P', `line ${i} part one `));
        if (i % 14 === 0) lines.push(cri(i % 60, 'stderr', 'F', `err ${i}`));
        lines.push(cri(i % 60, 'stdout', 'F', `part two`));
      } else {
        lines.push(cri(i % 60, 'stdout', 'F', `line ${i} ${'x'.repeat(i % 50)}`));
      }
    }
    const file = await logFile(lines.join(''));
    const all = await readAll(file, { stream: 'stdout' });
    expect(all).toHaveLength(total);

    const fh = await open(file, 'r');
    const proto = Object.getPrototypeOf(fh) as { read: (...args: unknown[]) => Promise<unknown> };
    await fh.close();
    const readSpy = vi.spyOn(proto, 'read');
    const started = performance.now();
    const last = await readAll(file, { tail: 10, stream: 'stdout' });
    const elapsed = performance.now() - started;
    expect(last).toEqual(all.slice(-10));
    // Bytes asked for: a couple of 64 KiB chunks backwards and forwards,
    // nowhere near the file's size.
    const requested = readSpy.mock.calls.reduce((sum, call) => sum + Number(call[2] ?? 0), 0);
    expect(requested).toBeLessThan(512 * 1024);
    expect(elapsed).toBeLessThan(1000);

    readSpy.mockRestore();
    const withErr = await readAll(file, { tail: 25 });
    const full = await readAll(file);
    expect(withErr).toEqual(full.slice(-25));
  });

  it('does not scan a huge hole before the window', async () => {
    // 4 GiB of zeros (sparse), then a few lines: a full read would take long.
    const file = path.join(dir, '0.log');
    await writeFile(file, '');
    await truncate(file, 4 * 1024 ** 3);
    await appendFile(file, '\n' + cri(1, 'stdout', 'F', 'a') + cri(2, 'stdout', 'F', 'b') + cri(3, 'stdout', 'F', 'c'));
    const started = performance.now();
    expect(await readAll(file, { tail: 2 })).toEqual(['b\n', 'c\n']);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('readContainerLog follow', () => {
  it('yields appended lines until aborted', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'first'));
    const ac = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of readContainerLog(file, { follow: true, signal: ac.signal, pollInterval: 20 })) {
        seen.push(chunk);
        if (seen.length === 1) {
          await appendFile(file, cri(2, 'stdout', 'P', 'sec'));
          await appendFile(file, cri(2, 'stdout', 'F', 'ond'));
        }
        if (seen.length === 2) await appendFile(file, cri(3, 'stderr', 'F', 'third'));
        if (seen.length === 3) ac.abort();
      }
    })();
    await reading;
    expect(seen).toEqual(['first\n', 'second\n', 'third\n']);
  });

  it('starts at the end with tail 0 and ends when aborted while idle', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'old') + cri(2, 'stdout', 'P', 'new '));
    const ac = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of readContainerLog(file, { follow: true, tail: 0, signal: ac.signal, pollInterval: 20 })) {
        seen.push(chunk);
      }
    })();
    await new Promise((r) => setTimeout(r, 60));
    await appendFile(file, cri(3, 'stdout', 'F', 'line'));
    await vi.waitFor(() => expect(seen).toEqual(['new line\n']), { timeout: 2000, interval: 10 });
    ac.abort();
    await reading;
  });

  it('ends when the container stops running, printing what is left', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'a'));
    let running = true;
    const reading = readAll(file, { follow: true, pollInterval: 20, isRunning: () => running });
    await new Promise((r) => setTimeout(r, 50));
    await appendFile(file, cri(2, 'stdout', 'P', 'unfinished'));
    running = false;
    expect(await reading).toEqual(['a\n', 'unfinished\n']);
  });

  it('follows the file across rotation', async () => {
    const file = await logFile(cri(1, 'stdout', 'F', 'before'));
    const ac = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of readContainerLog(file, { follow: true, signal: ac.signal, pollInterval: 20 })) {
        seen.push(chunk);
        if (seen.length === 1) {
          await appendFile(file, cri(2, 'stdout', 'F', 'late in old file'));
          await rename(file, `${file}.20240501-100002`);
          await writeFile(file, cri(3, 'stdout', 'F', 'in new file'));
        }
        if (seen.length === 3) ac.abort();
      }
    })();
    await reading;
    expect(seen).toEqual(['before\n', 'late in old file\n', 'in new file\n']);
  });
});
