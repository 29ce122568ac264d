/**
 * The CRI client's message reuse for lists (src/lib/cri/memo.ts): a list
 * decodes to what the generated decoder gives; an item seen before comes
 * back as the same frozen object, an item whose bytes changed (even past
 * the hashed prefix) is decoded afresh, and the memo stays bounded.
 */
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import { describe, expect, it } from 'vitest';
import { Container, ContainerState, ListContainersResponse, ListPodSandboxResponse, PodSandbox, PodSandboxState } from '../../src/lib/cri/index.js';
import { MessageMemo, decodeMemoList, deepFreeze } from '../../src/lib/cri/memo.js';

function container(i: number, state = ContainerState.CONTAINER_RUNNING, restarts = '0'): Container {
  return Container.fromPartial({
    id: `${'c'.repeat(56)}${String(i).padStart(8, '0')}`,
    podSandboxId: `${'s'.repeat(56)}${String(i).padStart(8, '0')}`,
    metadata: { name: 'app', attempt: 0 },
    image: { image: 'docker.io/library/busybox:1.36', annotations: {} },
    state,
    createdAt: 1_700_000_000_123_456_789n,
    imageRef: 'sha256:6d7f20950c462',
    labels: { 'io.kubernetes.pod.name': `pod-${i}`, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': `uid-${i}` },
    annotations: { 'io.kubernetes.container.hash': '1a2b3c', 'io.kubernetes.container.restartCount': restarts },
  });
}

const encode = (cs: Container[]): Uint8Array => ListContainersResponse.encode({ containers: cs }).finish();
const plainDecode = (b: Uint8Array): Container[] => ListContainersResponse.decode(new BinaryReader(b)).containers;
const newMemo = (bytes?: number): MessageMemo<Container> => new MessageMemo((b) => Container.decode(b), [8, 9], bytes);

describe('decodeMemoList', () => {
  it('decodes what the generated decoder decodes, empty lists included', () => {
    const memo = newMemo();
    const bytes = encode([container(1), container(2, ContainerState.CONTAINER_EXITED)]);
    expect(decodeMemoList(bytes, memo)).toEqual(plainDecode(bytes));
    expect(decodeMemoList(encode([]), memo)).toEqual([]);
    const sandboxes = ListPodSandboxResponse.encode({
      items: [PodSandbox.fromPartial({ id: 'sb1', state: PodSandboxState.SANDBOX_READY, labels: { a: 'b' } })],
    }).finish();
    const sbMemo = new MessageMemo((b) => PodSandbox.decode(b), [5, 6]);
    expect(decodeMemoList(sandboxes, sbMemo)).toEqual(ListPodSandboxResponse.decode(sandboxes).items);
  });

  it('answers an unchanged item with the object it decoded before, frozen', () => {
    const memo = newMemo();
    const first = decodeMemoList(encode([container(1), container(2)]), memo);
    const second = decodeMemoList(encode([container(2), container(1), container(3)]), memo);
    expect(second[0]).toBe(first[1]);
    expect(second[1]).toBe(first[0]);
    expect(second[2]).toEqual(container(3));
    expect(memo.hits).toBe(2);
    expect(memo.misses).toBe(3);
    const c = second[0] as Container;
    expect(Object.isFrozen(c) && Object.isFrozen(c.labels) && Object.isFrozen(c.metadata) && Object.isFrozen(c.image)).toBe(true);
    expect(() => {
      (c.labels as Record<string, string>)['x'] = 'y';
    }).toThrow(TypeError);
  });

  it('takes an item whose map entries come in another order (as Go writes them) for the same item', () => {
    const memo = newMemo();
    const a = container(1);
    const shuffled = { ...a, labels: Object.fromEntries(Object.entries(a.labels).reverse()), annotations: Object.fromEntries(Object.entries(a.annotations).reverse()) };
    const bytesA = encode([a]);
    const bytesB = encode([shuffled]);
    expect(Buffer.from(bytesA).equals(Buffer.from(bytesB))).toBe(false);
    const [first] = decodeMemoList(bytesA, memo);
    const [second] = decodeMemoList(bytesB, memo);
    expect(second).toBe(first);
    // A label moved to the other map, or one entry fewer, is another item.
    const moved = { ...a, labels: { ...a.labels, 'io.kubernetes.container.hash': '1a2b3c' }, annotations: { 'io.kubernetes.container.restartCount': '0' } };
    const [third] = decodeMemoList(encode([moved]), memo);
    expect(third).not.toBe(first);
    expect(third).toEqual(moved);
    const fewer = { ...a, labels: { 'io.kubernetes.pod.uid': 'uid-1' } };
    expect(decodeMemoList(encode([fewer]), memo)[0]).toEqual(fewer);
    expect(memo.hits).toBe(1);
  });

  it('decodes afresh an item whose bytes changed, in the state or far past the hashed prefix', () => {
    const memo = newMemo();
    const [running] = decodeMemoList(encode([container(1)]), memo);
    const [exited] = decodeMemoList(encode([container(1, ContainerState.CONTAINER_EXITED)]), memo);
    expect(exited).not.toBe(running);
    expect(exited?.state).toBe(ContainerState.CONTAINER_EXITED);
    // The restart count is the last annotation: same length, same prefix, other bytes.
    const [restarted] = decodeMemoList(encode([container(1, ContainerState.CONTAINER_EXITED, '1')]), memo);
    expect(restarted?.annotations['io.kubernetes.container.restartCount']).toBe('1');
    expect(memo.hits).toBe(0);
  });

  it('skips fields it does not know and refuses a truncated item', () => {
    const w = new BinaryWriter();
    w.uint32(8 * 7 + 0).uint32(42); // field 7, varint: unknown
    w.uint32(10).bytes(Container.encode(container(1)).finish());
    expect(decodeMemoList(w.finish(), newMemo())).toEqual([container(1)]);
    const whole = encode([container(1)]);
    expect(() => decodeMemoList(whole.subarray(0, whole.length - 5), newMemo())).toThrow(/premature EOF/);
  });

  it('stays bounded: items not seen for two generations are dropped', () => {
    const itemBytes = Container.encode(container(1)).finish().length;
    const memo = newMemo(itemBytes * 10);
    for (let round = 0; round < 50; round++) decodeMemoList(encode([container(round)]), memo);
    expect(memo.size).toBeLessThanOrEqual(20);
    // The last one is still kept.
    decodeMemoList(encode([container(49)]), memo);
    expect(memo.hits).toBe(1);
  });
});

describe('deepFreeze', () => {
  it('freezes nested objects and arrays and leaves typed arrays alone', () => {
    const v = deepFreeze({ a: { b: [1, { c: 2 }] }, bytes: new Uint8Array([1]) });
    expect(Object.isFrozen(v.a.b[1])).toBe(true);
    expect(Object.isFrozen(v.a.b)).toBe(true);
    v.bytes[0] = 2;
    expect(v.bytes[0]).toBe(2);
  });
});
