/**
 * Which images klet pulled: the record image GC goes by (image-gc.ts).
 *
 * klet never removes what it did not create. The kubelet's image GC takes
 * every unused image of its runtime; klet takes only those it brought onto
 * the runtime itself by a pull for a pod. Each such pull is recorded under
 * the root dir, one file per reference:
 *
 *     <root-dir>/pulled-images/<sha256 of the reference>.json
 *
 * holding the reference as containerd names it (docker.io/library/... for
 * short names) and the image ID. A pull of an image that was already
 * present (policy Always) brought nothing new and is not recorded. An image
 * is klet's when every tag it has is one klet recorded (a tag another client
 * added makes it theirs too, and keeps it), and its digests are of
 * repositories klet pulled from.
 */
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { parseImageReference } from '../image/reference.js';
import { writeFileAtomic } from './poddir.js';

export interface PulledImageRecord {
  /** The reference as containerd names it (a repo tag, or repo@digest). */
  ref: string;
  /** The image ID the pull gave. */
  imageRef: string;
  pulledAt: string;
}

export function pulledImagesDir(rootDir: string): string {
  return path.join(rootDir, 'pulled-images');
}

function recordFile(rootDir: string, ref: string): string {
  return path.join(pulledImagesDir(rootDir), `${createHash('sha256').update(ref).digest('hex').slice(0, 32)}.json`);
}

/**
 * A reference as containerd and the CRI name it: the docker.io domain (and
 * library/ for a one-component path) when it names no host, `:latest` when
 * it names neither tag nor digest. Unparsable references are returned as they are.
 */
export function normalizeImageName(image: string): string {
  const ref = parseImageReference(image);
  if (ref === undefined) return image;
  let name = ref.name;
  const slash = name.indexOf('/');
  const first = slash === -1 ? '' : name.slice(0, slash);
  if (slash === -1 || !(first.includes('.') || first.includes(':') || first === 'localhost')) {
    name = `docker.io/${slash === -1 ? 'library/' : ''}${name}`;
  }
  if (ref.digest !== undefined) return `${name}${ref.tag !== undefined ? `:${ref.tag}` : ''}@${ref.digest}`;
  return `${name}:${ref.tag ?? 'latest'}`;
}

/** `repo` of `repo:tag` or `repo@digest`. */
function repositoryOf(name: string): string {
  const at = name.indexOf('@');
  const base = at === -1 ? name : name.slice(0, at);
  const colon = base.lastIndexOf(':');
  return colon > base.lastIndexOf('/') ? base.slice(0, colon) : base;
}

/** Record that klet pulled `image` (as the pod names it), which the runtime now has as `imageRef`. */
export async function recordPulledImage(rootDir: string, image: string, imageRef: string): Promise<void> {
  const ref = normalizeImageName(image);
  await fsp.mkdir(pulledImagesDir(rootDir), { recursive: true });
  const rec: PulledImageRecord = { ref, imageRef, pulledAt: new Date().toISOString() };
  await writeFileAtomic(recordFile(rootDir, ref), JSON.stringify(rec) + '\n');
}

/** Every reference klet recorded pulling under this root dir (unreadable files skipped). */
export async function listPulledImages(rootDir: string): Promise<PulledImageRecord[]> {
  const dir = pulledImagesDir(rootDir);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const out: PulledImageRecord[] = [];
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    try {
      const r = JSON.parse(await fsp.readFile(path.join(dir, n), 'utf8')) as Partial<PulledImageRecord>;
      if (typeof r.ref === 'string') out.push({ ref: r.ref, imageRef: String(r.imageRef ?? ''), pulledAt: String(r.pulledAt ?? '') });
    } catch {
      // A torn or foreign file: not a record.
    }
  }
  return out;
}

/** Forget that klet pulled `ref` (its image was removed, or is gone). */
export async function forgetPulledImage(rootDir: string, ref: string): Promise<void> {
  await fsp.rm(recordFile(rootDir, ref), { force: true });
}

/**
 * Whether an image with these names is klet's to remove: it has a name,
 * every tag is one klet pulled, and every digest is of a repository klet
 * pulled from (or one it pulled by digest).
 */
export function pulledByKlet(image: { repoTags: readonly string[]; repoDigests: readonly string[] }, pulled: ReadonlySet<string>): boolean {
  if (image.repoTags.length === 0 && image.repoDigests.length === 0) return false;
  if (!image.repoTags.every((t) => pulled.has(t))) return false;
  const repos = new Set([...pulled].map(repositoryOf));
  return image.repoDigests.every((d) => pulled.has(d) || repos.has(repositoryOf(d)));
}
