/**
 * Image references, one grammar for all of klet (the distribution reference
 * grammar containerd, CRI and the kubelet use): parsing, validation, the
 * API server's default pull policy, the default tag the runtime assumes,
 * and the names klet gives the images it builds and imports.
 */
import { InputError } from '../errors.js';

const alnum = '[a-z0-9]+';
const pathComponent = `${alnum}(?:(?:[._]|__|-+)${alnum})*`;
const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const domain = `(?:${domainComponent}(?:\\.${domainComponent})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const tag = '[\\w][\\w.-]{0,127}';
const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}';
const IMAGE_REFERENCE_RE = new RegExp(`^((?:${domain}/)?${pathComponent}(?:/${pathComponent})*)(?::(${tag}))?(?:@(${digest}))?$`);
const PATH_COMPONENT_RE = new RegExp(`^${pathComponent}$`);
const DOMAIN_RE = new RegExp(`^${domain}$`);
const TAG_RE = new RegExp(`^${tag}$`);

/** Name, tag and digest of an image reference; undefined when it does not parse (Go then assumes no tag). */
export function parseImageReference(image: string): { name: string; tag?: string; digest?: string } | undefined {
  const m = IMAGE_REFERENCE_RE.exec(image);
  if (m === null || (m[1] as string).length > 255) return undefined;
  return { name: m[1] as string, tag: m[2], digest: m[3] };
}

/** Whether the image reference parses (what the kubelet reports InvalidImageName for). */
export function isValidImageReference(image: string): boolean {
  return parseImageReference(image) !== undefined;
}

/**
 * SetDefaults_Container's imagePullPolicy: Always for `:latest` or for an
 * untagged, undigested image (which means :latest), else IfNotPresent.
 */
export function defaultImagePullPolicy(image: string | undefined): 'Always' | 'IfNotPresent' {
  const ref = parseImageReference(image ?? '');
  if (ref === undefined) return 'IfNotPresent';
  const t = ref.tag ?? (ref.digest === undefined ? 'latest' : '');
  return t === 'latest' ? 'Always' : 'IfNotPresent';
}

/** The reference as the runtime looks it up: `:latest` added when it names no tag and no digest. */
export function withDefaultTag(image: string): string {
  const ref = parseImageReference(image);
  if (ref === undefined) {
    // Not a reference: leave the last path component's own judgement to the runtime.
    const last = image.split('/').pop() ?? image;
    return image.includes('@') || last.includes(':') ? image : `${image}:latest`;
  }
  return ref.tag === undefined && ref.digest === undefined ? `${image}:latest` : image;
}

/** A parsed image reference, `DOMAIN/PATH[:TAG]`. */
export interface ImageRef {
  /** Registry host (with port), e.g. `localhost` or `registry.example:5000`. */
  domain: string;
  /** Repository path below the domain, e.g. `klet/busybox`. */
  path: string;
  /** Tag, or undefined when the reference names none. */
  tag?: string;
}

/**
 * The host part klet gives names that have none. Docker would say
 * `docker.io/library`, but no image here came from Docker Hub, and a
 * `localhost/` name can never be mistaken for (or pulled from) a real registry.
 */
export const DEFAULT_IMAGE_DOMAIN = 'localhost';


/**
 * Parse `[DOMAIN/]PATH[:TAG]` with the grammar of the distribution reference
 * package (the one containerd and CRI use), except that a name without a
 * domain gets {@link DEFAULT_IMAGE_DOMAIN}. Digest references are refused:
 * klet names images it imports, and a digest is not a name.
 */
export function parseImageRef(ref: string): ImageRef {
  const bad = (why: string): InputError => new InputError(`invalid image name ${JSON.stringify(ref)}: ${why}`);
  if (ref === '') throw bad('empty');
  if (ref.includes('@')) throw bad('digest references are not supported here, give NAME[:TAG]');
  let name = ref;
  let tag: string | undefined;
  const colon = ref.lastIndexOf(':');
  if (colon > ref.lastIndexOf('/')) {
    name = ref.slice(0, colon);
    tag = ref.slice(colon + 1);
    if (!TAG_RE.test(tag)) throw bad(`invalid tag ${JSON.stringify(tag)}`);
  }
  const slash = name.indexOf('/');
  let domain = DEFAULT_IMAGE_DOMAIN;
  let repo = name;
  // Docker's rule: the first component is a host if it has a dot or a port,
  // is "localhost", or has upper-case letters (path components cannot).
  if (slash !== -1) {
    const first = name.slice(0, slash);
    if (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase()) {
      domain = first;
      repo = name.slice(slash + 1);
      if (!DOMAIN_RE.test(domain)) throw bad(`invalid registry host ${JSON.stringify(domain)}`);
    }
  }
  for (const component of repo.split('/')) {
    if (!PATH_COMPONENT_RE.test(component)) {
      throw bad(`invalid path component ${JSON.stringify(component)} (lower-case letters, digits and . _ - only)`);
    }
  }
  if (domain.length + 1 + repo.length > 255) throw bad('longer than 255 characters');
  return tag === undefined ? { domain, path: repo } : { domain, path: repo, tag };
}

/** `DOMAIN/PATH` of a parsed reference: containerd's import "base name". */
export function imageRepository(ref: ImageRef): string {
  return `${ref.domain}/${ref.path}`;
}

/** Canonical `DOMAIN/PATH:TAG`, with `latest` when no tag is given. */
export function formatImageRef(ref: ImageRef): string {
  return `${imageRepository(ref)}:${ref.tag ?? 'latest'}`;
}

/** `busybox` → `localhost/busybox:latest`; `localhost/klet/pause:3.10` stays (what klet names the images it imports). */
export function canonicalImageName(ref: string): string {
  return formatImageRef(parseImageRef(ref));
}
