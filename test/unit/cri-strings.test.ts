/**
 * The CRI client's string reuse (src/lib/cri/strings.ts): decoding through
 * InterningReader gives what the plain reader gives, and a string seen
 * before comes back without being decoded again.
 */
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { Container, ContainerState, ListContainersResponse } from '../../src/lib/cri/index.js';
import { InterningReader, MAX_INTERNED_BYTES, StringTable, asciiHash } from '../../src/lib/cri/strings.js';

function container(i: number, extra: Record<string, string> = {}): Container {
  return Container.fromPartial({
    id: `${'c'.repeat(56)}${String(i).padStart(8, '0')}`,
    podSandboxId: `${'s'.repeat(56)}${String(i).padStart(8, '0')}`,
    metadata: { name: 'app', attempt: 0 },
    state: ContainerState.CONTAINER_RUNNING,
    createdAt: 1_700_000_000_123_456_789n,
    imageRef: 'sha256:6d7f20950c462',
    labels: { 'io.kubernetes.pod.name': `pod-${i}`, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': `uid-${i}`, ...extra },
    annotations: { 'io.kubernetes.container.hash': '1a2b3c', 'io.kubernetes.container.restartCount': '0' },
  });
}

const encode = (cs: Container[]): Uint8Array => ListContainersResponse.encode({ containers: cs }).finish();

describe('InterningReader', () => {
  it('decodes exactly what the plain reader decodes: ASCII, non-ASCII, empty and long strings', () => {
    const cs = [
      container(1),
      container(2, { 'example.com/note': 'grüße, 日本語 ✓', empty: '', long: 'x'.repeat(MAX_INTERNED_BYTES + 1), edge: 'y'.repeat(MAX_INTERNED_BYTES) }),
    ];
    const bytes = encode(cs);
    const table = new StringTable();
    const plain = ListContainersResponse.decode(new BinaryReader(bytes));
    expect(ListContainersResponse.decode(new InterningReader(bytes, table))).toEqual(plain);
    // A second time, mostly from the table: still the same.
    expect(ListContainersResponse.decode(new InterningReader(bytes, table))).toEqual(plain);
    expect(plain.containers[1]?.labels['example.com/note']).toBe('grüße, 日本語 ✓');
  });

  it('returns the strings of an earlier response instead of decoding them again', () => {
    const table = new StringTable();
    const bytes = encode([container(1), container(2)]);
    const first = ListContainersResponse.decode(new InterningReader(bytes, table));
    const decoded = table.misses;
    expect(decoded).toBeGreaterThan(10);
    const second = ListContainersResponse.decode(new InterningReader(bytes, table));
    expect(table.misses).toBe(decoded); // nothing decoded anew
    expect(table.hits).toBeGreaterThanOrEqual(decoded);
    expect(second).toEqual(first);
  });

  it('decodes correctly when another string holds the same hash (a collision is a miss, never a wrong string)', () => {
    const table = new StringTable();
    const bytes = encode([container(7)]);
    // Plant a wrong string under the hash of every ASCII string in the message.
    const plain = ListContainersResponse.decode(new BinaryReader(bytes));
    const strings = [plain.containers[0]!.id, plain.containers[0]!.podSandboxId, ...Object.entries(plain.containers[0]!.labels).flat()];
    for (const s of strings) {
      const b = new TextEncoder().encode(s);
      table.keep(asciiHash(b, 0, b.length)!, `not-${s}`.slice(0, s.length).padEnd(s.length, '!'));
    }
    expect(ListContainersResponse.decode(new InterningReader(bytes, table))).toEqual(plain);
  });

  it('keeps at most two generations of strings', () => {
    const table = new StringTable(16);
    for (let i = 0; i < 200; i++) ListContainersResponse.decode(new InterningReader(encode([container(i)]), table));
    expect(table.size).toBeLessThanOrEqual(32);
  });

  it('fails on a truncated message as the plain reader does', () => {
    const bytes = encode([container(1)]).subarray(0, 40);
    expect(() => ListContainersResponse.decode(new BinaryReader(bytes))).toThrow(/premature EOF|out of range|index/i);
    expect(() => ListContainersResponse.decode(new InterningReader(bytes, new StringTable()))).toThrow(/premature EOF|out of range|index/i);
  });

  it('hashes only ASCII', () => {
    const b = new TextEncoder().encode('abcé');
    expect(asciiHash(b, 0, 3)).toBeTypeOf('number');
    expect(asciiHash(b, 0, b.length)).toBeUndefined();
  });
});
