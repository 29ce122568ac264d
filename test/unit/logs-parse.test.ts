import { describe, expect, it } from 'vitest';
import { formatCriTimestamp, parseCriLogLine, parseRfc3339Nano } from '../../src/lib/logs/index.js';

describe('parseCriLogLine', () => {
  it('parses a full stdout line with a nanosecond timestamp', () => {
    const e = parseCriLogLine('2016-10-06T00:17:09.669794202Z stdout F The content of the log entry 1\n');
    expect(e).not.toBeNull();
    expect(e?.stream).toBe('stdout');
    expect(e?.partial).toBe(false);
    expect(e?.tags).toEqual(['F']);
    expect(e?.message).toBe('The content of the log entry 1');
    expect(e?.timestamp).toBe('2016-10-06T00:17:09.669794202Z');
    expect(e?.nanos).toBe(669794202);
    expect(e?.time.toISOString()).toBe('2016-10-06T00:17:09.669Z');
  });

  it('parses a partial stderr line, keeping spaces in the content', () => {
    const e = parseCriLogLine('2016-10-06T00:17:09.669794203Z stderr P  leading and trailing  ');
    expect(e?.stream).toBe('stderr');
    expect(e?.partial).toBe(true);
    expect(e?.message).toBe(' leading and trailing  ');
  });

  it('accepts an empty message and extra tags', () => {
    expect(parseCriLogLine('2024-01-01T00:00:00Z stdout F ')?.message).toBe('');
    const e = parseCriLogLine('2024-01-01T00:00:00Z stdout F:future:tags x');
    expect(e?.tags).toEqual(['F', 'future', 'tags']);
    expect(e?.message).toBe('x');
  });

  it('applies timezone offsets and short fractions', () => {
    const e = parseCriLogLine('2024-03-01T09:30:00.5+02:00 stdout F hi');
    expect(e?.time.toISOString()).toBe('2024-03-01T07:30:00.500Z');
    expect(e?.nanos).toBe(500_000_000);
  });

  it('keeps multi-byte content intact', () => {
    expect(parseCriLogLine('2024-01-01T00:00:00Z stdout F héllo wörld ✓')?.message).toBe('héllo wörld ✓');
  });

  it.each([
    ['empty', ''],
    ['no fields', 'garbage'],
    ['bad timestamp', 'yesterday stdout F hi'],
    ['impossible date', '2024-02-30T00:00:00Z stdout F hi'],
    ['bad hour', '2024-02-01T24:00:00Z stdout F hi'],
    ['unknown stream', '2024-01-01T00:00:00Z stdin F hi'],
    ['unknown tag', '2024-01-01T00:00:00Z stdout X hi'],
    ['missing content separator', '2024-01-01T00:00:00Z stdout F'],
    ['docker json', '{"log":"hi\\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}'],
  ])('returns null for %s', (_what, line) => {
    expect(parseCriLogLine(line)).toBeNull();
  });
});

describe('timestamps', () => {
  it('formats with nine fraction digits, keeping the offset', () => {
    expect(formatCriTimestamp('2024-01-01T00:00:00Z')).toBe('2024-01-01T00:00:00.000000000Z');
    expect(formatCriTimestamp('2024-01-01T00:00:00.12Z')).toBe('2024-01-01T00:00:00.120000000Z');
    expect(formatCriTimestamp('2024-01-01T00:00:00.123456789+05:30')).toBe('2024-01-01T00:00:00.123456789+05:30');
    expect(formatCriTimestamp('2024-01-01T00:00:00.1+00:00')).toBe('2024-01-01T00:00:00.100000000Z');
  });

  it('parses leap-year dates and rejects invalid ones', () => {
    expect(parseRfc3339Nano('2024-02-29T12:00:00Z')?.time.toISOString()).toBe('2024-02-29T12:00:00.000Z');
    expect(parseRfc3339Nano('2023-02-29T12:00:00Z')).toBeNull();
    expect(parseRfc3339Nano('2023-13-01T12:00:00Z')).toBeNull();
  });
});
