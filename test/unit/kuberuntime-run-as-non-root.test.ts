/**
 * runAsNonRoot as the kubelet's verifyRunAsNonRoot decides it, the image's
 * user as getImageUser reads it (no user: root), in the kubelet's words.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ContainerConfigError } from '../../src/lib/kuberuntime/env.js';
import { needsImageUser, verifyRunAsNonRoot, type ImageUser } from '../../src/lib/kuberuntime/run-as-non-root.js';

const WHO = '(pod: "p_ns(u1)", container: c)';

function pod(podSc: Record<string, unknown> | undefined, sc: Record<string, unknown> | undefined): { pod: V1Pod; c: V1Container } {
  const c: V1Container = { name: 'c', image: 'busybox', ...(sc ? { securityContext: sc } : {}) };
  return { pod: { metadata: { name: 'p', namespace: 'ns', uid: 'u1' }, spec: { containers: [c], ...(podSc ? { securityContext: podSc } : {}) } }, c };
}

const cases: Array<{ name: string; podSc?: Record<string, unknown>; sc?: Record<string, unknown>; image?: ImageUser; error?: string; needsImage: boolean }> = [
  { name: 'not asked for', image: { uid: 0 }, needsImage: false },
  { name: 'runAsNonRoot false', sc: { runAsNonRoot: false }, image: { uid: 0 }, needsImage: false },
  { name: 'explicit root user', sc: { runAsNonRoot: true, runAsUser: 0 }, error: `container's runAsUser breaks non-root policy ${WHO}`, needsImage: false },
  { name: 'explicit non-root user, root image', sc: { runAsNonRoot: true, runAsUser: 1000 }, image: { uid: 0 }, needsImage: false },
  { name: 'image runs as root', sc: { runAsNonRoot: true }, image: { uid: 0 }, error: `container has runAsNonRoot and image will run as root ${WHO}`, needsImage: true },
  { name: 'image names no user (root)', sc: { runAsNonRoot: true }, image: { username: '' }, error: `container has runAsNonRoot and image will run as root ${WHO}`, needsImage: true },
  { name: 'image user 1234', sc: { runAsNonRoot: true }, image: { uid: 1234 }, needsImage: true },
  {
    name: 'image user by name',
    sc: { runAsNonRoot: true },
    image: { username: 'nobody' },
    error: `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root ${WHO}`,
    needsImage: true,
  },
  { name: "the pod's runAsNonRoot", podSc: { runAsNonRoot: true }, image: { uid: 0 }, error: `container has runAsNonRoot and image will run as root ${WHO}`, needsImage: true },
  { name: "the pod's runAsUser 0 with the container's runAsNonRoot", podSc: { runAsUser: 0 }, sc: { runAsNonRoot: true }, error: `container's runAsUser breaks non-root policy ${WHO}`, needsImage: false },
  { name: "the container's runAsNonRoot false over the pod's true", podSc: { runAsNonRoot: true }, sc: { runAsNonRoot: false }, image: { uid: 0 }, needsImage: false },
];

describe('verifyRunAsNonRoot', () => {
  for (const t of cases) {
    it(t.name, () => {
      const { pod: p, c } = pod(t.podSc, t.sc);
      expect(needsImageUser(p, c)).toBe(t.needsImage);
      const run = () => verifyRunAsNonRoot(p, c, t.image);
      if (t.error === undefined) expect(run).not.toThrow();
      else {
        expect(run).toThrow(ContainerConfigError);
        expect(run).toThrow(t.error);
      }
    });
  }
});
