/**
 * The API server as a pod source (lib/config/api.ts), fed by a fake
 * list+watch: each version of a pod becomes one LoadedPod, handed again as
 * the same object while the watch hands the same pod, so that PodConfig
 * neither copies nor compares unchanged pods on every watch event.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { ApiSource } from '../../src/lib/config/api.js';
import type { SourceSnapshot } from '../../src/lib/config/source.js';
import { CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../../src/lib/pod/static-pod.js';

const pod = (name: string, rv: string, phase = 'Pending'): V1Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: rv },
  spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'busybox' }] },
  status: { phase },
});

it('hands a pod the watch hands again as the same LoadedPod, and a new version as a new one', async () => {
  let deliver: (pods: V1Pod[]) => void = () => undefined;
  const ctrl = new AbortController();
  const source = new ApiSource({
    server: 'https://api.example:6443',
    watch: async (on, signal) => {
      deliver = on.pods;
      await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
    },
  });
  const snapshots: SourceSnapshot[] = [];
  const running = source.run({ snapshot: (s) => snapshots.push(s), failed: () => undefined }, ctrl.signal);
  const a = pod('a', '1');
  const b = pod('b', '2');
  deliver([a, b]);
  const b2 = pod('b', '3', 'Running');
  deliver([a, b2]);
  deliver([a, b2]);
  ctrl.abort();
  await running;

  const [first, second, third] = snapshots.map((s) => s.pods);
  expect(second![0]).toBe(first![0]);
  expect(second![1]).not.toBe(first![1]);
  expect(second![1]!.pod.status?.phase).toBe('Running');
  expect(third![0]).toBe(first![0]);
  expect(third![1]).toBe(second![1]);
  // What the source adds to each pod stays: its source, and when it was first seen (kept across versions).
  const seen = first![1]!.pod.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION];
  expect(second![1]!.pod.metadata?.annotations).toMatchObject({ [CONFIG_SOURCE_ANNOTATION]: 'api', [CONFIG_SEEN_ANNOTATION]: seen });
  expect(second![1]!.source.path).toBe('https://api.example:6443/api/v1/namespaces/default/pods/b');
});
