import { describe, expect, it } from 'vitest';
import { buildPodRecords } from '../../src/lib/pleg/diff.js';
import { ContainerState, PodSandboxState, type Container, type PodSandbox } from '../../src/lib/cri/gen/api.js';
import { relistedReadySandbox, relistedRunningContainer } from '../../src/lib/server/stream-target.js';

const UID = 'uid-1';
const container = (id: string, name: string, state: ContainerState, createdAt: bigint): Container =>
  ({ id, podSandboxId: 'sb', state, createdAt, labels: { 'io.kubernetes.pod.uid': UID, 'io.kubernetes.container.name': name }, annotations: {}, imageRef: '' }) as unknown as Container;
const sandbox = (id: string, state: PodSandboxState, createdAt: bigint): PodSandbox =>
  ({ id, state, createdAt, labels: { 'io.kubernetes.pod.uid': UID }, annotations: {} }) as unknown as PodSandbox;

describe('relistedRunningContainer', () => {
  it('picks the newest running container of the name, as a CRI list of running containers would', () => {
    const record = buildPodRecords(
      [],
      [
        container('old', 'app', ContainerState.CONTAINER_RUNNING, 1n),
        container('new', 'app', ContainerState.CONTAINER_RUNNING, 3n),
        container('newest-exited', 'app', ContainerState.CONTAINER_EXITED, 5n),
        container('created', 'app', ContainerState.CONTAINER_CREATED, 6n),
        container('other', 'sidecar', ContainerState.CONTAINER_RUNNING, 9n),
      ],
    ).get(UID);
    expect(relistedRunningContainer(record, 'app')).toBe('new');
    expect(relistedRunningContainer(record, 'sidecar')).toBe('other');
  });

  it('finds nothing for a container not running, an unknown name or a pod the relist did not see', () => {
    const record = buildPodRecords([], [container('x', 'app', ContainerState.CONTAINER_EXITED, 1n)]).get(UID);
    expect(relistedRunningContainer(record, 'app')).toBeUndefined();
    expect(relistedRunningContainer(record, 'nope')).toBeUndefined();
    expect(relistedRunningContainer(undefined, 'app')).toBeUndefined();
  });
});

describe('relistedReadySandbox', () => {
  it('picks the newest ready sandbox, none when none is ready', () => {
    const sandboxes = [sandbox('a', PodSandboxState.SANDBOX_READY, 1n), sandbox('b', PodSandboxState.SANDBOX_READY, 2n), sandbox('c', PodSandboxState.SANDBOX_NOTREADY, 3n)];
    expect(relistedReadySandbox(buildPodRecords(sandboxes, []).get(UID))).toBe('b');
    expect(relistedReadySandbox(buildPodRecords([sandbox('c', PodSandboxState.SANDBOX_NOTREADY, 3n)], []).get(UID))).toBeUndefined();
    expect(relistedReadySandbox(undefined)).toBeUndefined();
  });
});
