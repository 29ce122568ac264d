import { describe, expect, it } from 'vitest';
import { defaultImagePullPolicy, isValidImageReference, withDefaultTag } from '../../src/lib/image/reference.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;

describe('defaultImagePullPolicy', () => {
  it.each([
    ['busybox', 'Always'],
    ['busybox:latest', 'Always'],
    ['docker.io/library/busybox', 'Always'],
    ['registry:5000/team/app', 'Always'],
    ['registry:5000/team/app:latest', 'Always'],
    ['busybox:1.0', 'IfNotPresent'],
    ['localhost/klet/busybox:1.36', 'IfNotPresent'],
    ['registry:5000/team/app:v2', 'IfNotPresent'],
    [`busybox@${DIGEST}`, 'IfNotPresent'],
    [`busybox:1.36@${DIGEST}`, 'IfNotPresent'],
    // A tag wins over a digest when deciding, as the API server defaults it.
    [`busybox:latest@${DIGEST}`, 'Always'],
  ])('%s → %s', (image, want) => {
    expect(defaultImagePullPolicy(image)).toBe(want);
  });
});

describe('withDefaultTag', () => {
  it.each([
    ['busybox', 'busybox:latest'],
    ['busybox:1.36', 'busybox:1.36'],
    ['localhost/klet/busybox', 'localhost/klet/busybox:latest'],
    ['registry:5000/a/b', 'registry:5000/a/b:latest'],
    ['registry:5000/a/b:tag', 'registry:5000/a/b:tag'],
    [`a@${DIGEST}`, `a@${DIGEST}`],
  ])('%s → %s', (image, want) => {
    expect(withDefaultTag(image)).toBe(want);
  });
});

describe('isValidImageReference', () => {
  it.each([
    'busybox',
    'busybox:1.36',
    'localhost/klet/busybox:1.36',
    'registry:5000/a/b:tag',
    'registry.example.com/team/app-name_x.y:v1.2.3-rc.1',
    'a__b/c--d',
    `a@${DIGEST}`,
    `docker.io/library/busybox:1.36@${DIGEST}`,
  ])('accepts %s', (image) => {
    expect(isValidImageReference(image)).toBe(true);
  });

  it.each([
    '',
    'Busybox',
    'busybox:1.36:extra',
    'a b',
    'a:',
    'a/',
    '/a',
    'a//b',
    'a@sha256:abc',
    '-a',
    'a:-tag',
    `a:${'t'.repeat(129)}`,
    'x'.repeat(256),
  ])('rejects %j', (image) => {
    expect(isValidImageReference(image)).toBe(false);
  });
});
