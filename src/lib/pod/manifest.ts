/**
 * Reading pod manifests: files, a static pod directory, or the body of a
 * manifest URL. This is the kubelet's static pod source (pkg/kubelet/config
 * file.go / http.go), with the API server's strictness added:
 *
 * - YAML or JSON; one file may hold several `---` documents; empty
 *   documents are skipped. YAML is read as YAML 1.1, like Kubernetes'
 *   go-yaml: `0644` is octal (420), `yes`/`on` are booleans, and dates stay
 *   strings.
 * - Each document is a Pod, ConfigMap or Secret (apiVersion v1), or a
 *   PodList / List of them. Anything else is an error naming the kind.
 * - Objects are decoded strictly (unknown fields are errors), defaulted,
 *   turned into static pods and validated. Errors carry file, line and field
 *   path: `etcd.yaml:14: spec.containers[0].image: Required value`.
 * - A bad file, document or list item never hides the good ones: all
 *   results and all errors come back together (ManifestSet).
 * - Files over 10 MiB are refused without reading them (the kubelet's
 *   maxConfigLength), and binary files get a one-line error.
 *
 * Directory rules (readManifestDir) are the kubelet's: the entries of the
 * directory in name order, skipping names that start with '.' (editor swap
 * files, `..data` symlinks of mounted ConfigMaps) and anything that is not a
 * regular file after following symlinks; subdirectories are not descended.
 * Every other file is read whatever its extension, as the kubelet does:
 * manifests named `kube-proxy.manifest` or without an extension exist in
 * the wild, and ignoring them silently would be worse than an error. The
 * classic trap, a backup copy such as `etcd.yaml.bak` next to the original,
 * is caught by the duplicate check: the second pod with the same namespace
 * and name is reported as an error and only the first (in name order) runs.
 */
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { V1ConfigMap, V1ListMeta, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Composer, CST, type Document, Lexer, type Tags, isAlias, isMap, isScalar, isSeq, LineCounter, Parser, visit } from 'yaml';
import { InputError, type KletErrorOptions, errorMessage, fsErrorReason } from '../errors.js';
import { log } from '../log.js';
import { mapLimit } from '../util/limit.js';
import { decodeModel, describeJSONValue, isPlainObject } from './decode.js';
import { applyPodDefaults, applySecretDefaults, cloneModel, DEFAULT_NAMESPACE } from './defaults.js';
import { type FieldError, FieldPath, type PathSegment, notSupported, required, unknownField } from './field.js';
import { toStaticPod } from './static-pod.js';
import { validateConfigMap, validatePod, validateSecret } from './validate.js';

/** Largest manifest klet reads: the kubelet's maxConfigLength. */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;

/** Kinds a manifest document may have. */
export const MANIFEST_KINDS = ['Pod', 'ConfigMap', 'Secret', 'PodList', 'List'] as const;

export interface ManifestErrorInit {
  /** The file as the user named it, or the URL. */
  file: string;
  /** 1-based line of the offending field or document, when known. */
  line?: number;
  /** API field path, e.g. `spec.containers[0].image`. */
  fieldPath?: string;
  /** What is wrong, without file, line or field: `Required value`. */
  message: string;
}

/**
 * One problem with a manifest: `file`, `line` and `fieldPath` say where,
 * `message` says what (`Required value`), and toString() gives the
 * one-liner `file:line: fieldPath: message` to show users.
 *
 * Because `message` is only the reason, throwing a ManifestError directly
 * to the base command would print it without its location: throw
 * manifestErrorsToError(errors) instead, whose message is the one-liner.
 */
export class ManifestError extends InputError {
  override readonly code: string = 'INVALID_MANIFEST';
  readonly file: string;
  readonly line: number | undefined;
  readonly fieldPath: string | undefined;

  constructor(init: ManifestErrorInit, options: KletErrorOptions = {}) {
    super(init.message, options);
    this.file = init.file;
    this.line = init.line;
    this.fieldPath = init.fieldPath === '' ? undefined : init.fieldPath;
  }

  /** `file:line: fieldPath: message`, leaving out the parts that are unknown. */
  override toString(): string {
    const where = this.line === undefined ? this.file : `${this.file}:${this.line}`;
    return this.fieldPath === undefined ? `${where}: ${this.message}` : `${where}: ${this.fieldPath}: ${this.message}`;
  }

  toJSON(): ManifestErrorInit & { text: string } {
    return { file: this.file, line: this.line, fieldPath: this.fieldPath, message: this.message, text: this.toString() };
  }
}

/** Thrown for manifests that did not load: the first problem on line one, all of them in `errors`. */
export class InvalidManifestsError extends InputError {
  override readonly code: string = 'INVALID_MANIFEST';
  readonly errors: readonly ManifestError[];

  constructor(errors: readonly ManifestError[], options: KletErrorOptions = {}) {
    const [first, ...rest] = errors;
    const head = first === undefined ? 'invalid manifest' : first.toString();
    const more = rest.length === 0 ? '' : ` (and ${rest.length} more)`;
    super([head + more, ...rest.map((e) => e.toString())].join('\n'), options);
    this.errors = errors;
  }
}

/**
 * One throwable error for a ManifestSet's errors: its message is the first
 * error's one-liner (the base command prints the first line), followed by
 * the others, one per line.
 */
export function manifestErrorsToError(errors: readonly ManifestError[]): InvalidManifestsError {
  return new InvalidManifestsError(errors);
}

/** Where an object came from. `path` is an absolute file path or the URL. */
export interface ManifestSource {
  /** file and http: static pods; api: pods bound to the node in the API server. */
  kind: 'file' | 'http' | 'api';
  path: string;
  /** 1-based line where the document (or list item) starts. */
  line?: number;
}

export interface LoadedPod {
  pod: V1Pod;
  source: ManifestSource;
}

export interface ManifestSet {
  pods: LoadedPod[];
  configMaps: V1ConfigMap[];
  secrets: V1Secret[];
  errors: ManifestError[];
}

interface DecodedBase {
  source: ManifestSource;
  /** The file as named by the user (or the URL), for error messages. */
  display: string;
  /** Path of the object inside its document: empty, or `items[i]` in a list. */
  base: FieldPath;
  /** Line of a field path (relative to the object) in the source, when it can be found. */
  locate(path: FieldPath): number | undefined;
}

/** A strictly decoded object of a manifest, not yet defaulted or validated. */
export type ManifestObject =
  | (DecodedBase & { kind: 'Pod'; object: V1Pod })
  | (DecodedBase & { kind: 'ConfigMap'; object: V1ConfigMap })
  | (DecodedBase & { kind: 'Secret'; object: V1Secret });

/** Result of reading manifests: decoded objects and every error met. */
export interface ParsedManifests {
  objects: ManifestObject[];
  errors: ManifestError[];
  /** The files (as named) or URLs read, in order; errors are reported in this order. */
  files: string[];
}

// ------------------------------------------------------------------ errors

function fileError(file: string, message: string, line?: number, cause?: unknown): ManifestError {
  return new ManifestError({ file, line, message }, cause === undefined ? {} : { cause });
}

/**
 * A file that failed to read with ENOENT was removed (or removed and put back)
 * while the directory was being read: not an error, the next read sees what
 * is there now. A dangling symlink still fails, and is reported.
 */
async function removedWhileReading(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
  } catch (err) {
    return (err as { code?: unknown }).code === 'ENOENT';
  }
  try {
    await fs.stat(file);
    return true; // put back since: the next read has it
  } catch {
    return false; // dangling symlink
  }
}

/** The error is the file system saying the file does not exist (it was removed while being read). */
function isMissingFile(e: ManifestError): boolean {
  return (e.cause as { code?: unknown } | undefined)?.code === 'ENOENT';
}


function sizeError(file: string, bytes: number | undefined): ManifestError {
  const size = bytes === undefined ? 'more than 10 MiB' : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  return fileError(file, `manifest is ${size}, larger than the ${MAX_MANIFEST_BYTES / (1024 * 1024)} MiB limit`);
}

// --------------------------------------------------------------- documents

/** The 1-based line of a YAML node's start. */
function lineOf(node: unknown, lc: LineCounter): number | undefined {
  const range = (node as { range?: unknown } | null)?.range;
  if (!Array.isArray(range) || typeof range[0] !== 'number') return undefined;
  return lc.linePos(range[0]).line;
}

/**
 * The line of a field path in a YAML document: the line of the deepest
 * node the path reaches (a map key for fields, so `unknown field` points at
 * the misspelt key; the parent for a field that is missing).
 */
function locateInDocument(doc: Document, lc: LineCounter, segments: readonly PathSegment[]): number | undefined {
  let node: unknown = doc.contents;
  let line = lineOf(node, lc);
  for (const seg of segments) {
    if (isAlias(node)) node = node.resolve(doc);
    if (seg.kind === 'index') {
      if (!isSeq(node)) break;
      const item: unknown = node.items[seg.index];
      if (item === undefined) break;
      node = item;
      line = lineOf(item, lc) ?? line;
    } else {
      if (!isMap(node)) break;
      const name = seg.kind === 'field' ? seg.name : seg.key;
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === name);
      if (pair === undefined) break;
      line = lineOf(pair.key, lc) ?? line;
      node = pair.value;
    }
  }
  return line;
}

interface DocContext {
  display: string;
  source: Omit<ManifestSource, 'line'>;
  doc: Document;
  lc: LineCounter;
}

function fieldErrors(ctx: DocContext, errs: readonly FieldError[], base = FieldPath.root()): ManifestError[] {
  return errs.map((e) => {
    const full = e.path.under(base);
    return new ManifestError({
      file: ctx.display,
      line: locateInDocument(ctx.doc, ctx.lc, full.segments),
      fieldPath: full.toString(),
      message: e.body,
    });
  });
}

type ObjectKind = 'Pod' | 'ConfigMap' | 'Secret';
const MODEL_OF: Readonly<Record<ObjectKind, string>> = { Pod: 'V1Pod', ConfigMap: 'V1ConfigMap', Secret: 'V1Secret' };

/** Decode one Pod/ConfigMap/Secret at `base` of the document. */
function decodeObject(ctx: DocContext, raw: Record<string, unknown>, kind: ObjectKind, base: FieldPath, out: ParsedManifests): void {
  const { value, errors } = decodeModel<V1Pod | V1ConfigMap | V1Secret>(raw, MODEL_OF[kind], base);
  if (value === undefined) {
    out.errors.push(...fieldErrors(ctx, errors));
    return;
  }
  // PodList items may leave apiVersion and kind out.
  value.apiVersion = 'v1';
  value.kind = kind;
  const common: DecodedBase = {
    display: ctx.display,
    source: { ...ctx.source, line: locateInDocument(ctx.doc, ctx.lc, base.segments) },
    base,
    locate: (p) => locateInDocument(ctx.doc, ctx.lc, p.under(base).segments),
  };
  if (kind === 'Pod') out.objects.push({ ...common, kind, object: value as V1Pod });
  else if (kind === 'ConfigMap') out.objects.push({ ...common, kind, object: value as V1ConfigMap });
  else out.objects.push({ ...common, kind, object: value as V1Secret });
}

/** apiVersion and kind of a raw object; errors when missing or unsupported. */
function typeOf(ctx: DocContext, raw: Record<string, unknown>, base: FieldPath, out: ParsedManifests, implied?: ObjectKind): string | undefined {
  const errs: FieldError[] = [];
  const kind = raw.kind ?? implied;
  const apiVersion = raw.apiVersion ?? (implied === undefined ? undefined : 'v1');
  if (typeof kind !== 'string' || kind === '') errs.push(required(FieldPath.of('kind'), 'every manifest object needs apiVersion and kind'));
  else if (!(MANIFEST_KINDS as readonly string[]).includes(kind)) errs.push(notSupported(FieldPath.of('kind'), kind, MANIFEST_KINDS));
  if (typeof apiVersion !== 'string' || apiVersion === '') errs.push(required(FieldPath.of('apiVersion')));
  else if (apiVersion !== 'v1' && errs.length === 0) errs.push(notSupported(FieldPath.of('apiVersion'), apiVersion, ['v1']));
  if (implied !== undefined && errs.length === 0 && kind !== implied) {
    errs.push(notSupported(FieldPath.of('kind'), kind, [implied]));
  }
  if (errs.length > 0) {
    out.errors.push(...fieldErrors(ctx, errs, base));
    return undefined;
  }
  return kind as string;
}

function decodeList(ctx: DocContext, raw: Record<string, unknown>, kind: 'PodList' | 'List', out: ParsedManifests): void {
  const errs: FieldError[] = [];
  for (const key of Object.keys(raw)) {
    if (!['apiVersion', 'kind', 'metadata', 'items'].includes(key)) errs.push(unknownField(FieldPath.of(key)));
  }
  errs.push(...decodeModel<V1ListMeta>(raw.metadata ?? {}, 'V1ListMeta', FieldPath.of('metadata')).errors);
  const items = raw.items ?? [];
  if (!Array.isArray(items)) errs.push(required(FieldPath.of('items'), `expected a list, got ${describeJSONValue(items)}`));
  out.errors.push(...fieldErrors(ctx, errs));
  if (!Array.isArray(items)) return;
  items.forEach((item: unknown, i) => {
    const base = FieldPath.of('items').index(i);
    if (item === null) return;
    if (!isPlainObject(item)) {
      out.errors.push(...fieldErrors(ctx, [required(base, `expected an object, got ${describeJSONValue(item)}`)]));
      return;
    }
    const itemKind = typeOf(ctx, item, base, out, kind === 'PodList' ? 'Pod' : undefined);
    if (itemKind === undefined) return;
    if (itemKind !== 'Pod' && itemKind !== 'ConfigMap' && itemKind !== 'Secret') {
      out.errors.push(...fieldErrors(ctx, [notSupported(FieldPath.of('kind'), itemKind, ['Pod', 'ConfigMap', 'Secret'])], base));
      return;
    }
    decodeObject(ctx, item, itemKind, base, out);
  });
}

const YAML_OPTIONS = {
  // Kubernetes reads YAML with go-yaml v2: YAML 1.1 scalars, merge keys.
  version: '1.1',
  // ... but never turns a date-looking string into a timestamp.
  customTags: (tags: Tags): Tags => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
  prettyErrors: false,
  uniqueKeys: true,
} as const;

/**
 * Where to report a YAML syntax error. An error found at the end of the
 * input (an unclosed bracket or quote) is positioned after the last
 * newline, a line past the end of the file: report the last line with
 * content instead.
 */
function syntaxErrorPos(text: string, pos: number): number {
  let p = Math.min(pos, text.length);
  if (text.slice(p).trim() !== '') return p;
  while (p > 0 && /\s/.test(text[p - 1] as string)) p--;
  return Math.max(0, p - 1);
}

/**
 * The deepest YAML/JSON nesting a manifest may have. Pods nest about 10
 * levels; the cap keeps hostile input (100 000 `[`) from overflowing the
 * parser's stack and from costing memory out of proportion to its size.
 */
export const MAX_NESTING_DEPTH = 1000;

/**
 * The 1-based line where nesting first exceeds `max`, or null. A cheap upper
 * bound first (every flow opener in the text, plus the longest run of
 * indentation and block indicators at a line's start); only input that could
 * be that deep is lexed (the yaml package's lexer is iterative), counting
 * flow collections exactly and block nesting by indentation plus indicators.
 */
export function nestingTooDeep(text: string, max = MAX_NESTING_DEPTH): number | null {
  let openers = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) openers++;
  }
  let lead = 0;
  for (const m of text.matchAll(/^[ \t?:-]*/gm)) if (m[0].length > lead) lead = m[0].length;
  if (openers + lead <= max) return null;
  let flow = 0;
  let indicators = 0;
  let indent = 0;
  let atStart = true;
  let line = 1;
  for (const tok of new Lexer().lex(text)) {
    const t = CST.tokenType(tok);
    if (t === 'newline') {
      atStart = true;
      indicators = 0;
      indent = 0;
      line++;
      continue;
    }
    if (t === 'space') {
      if (atStart) indent = tok.length;
      continue;
    }
    atStart = false;
    if (t === 'flow-map-start' || t === 'flow-seq-start') flow++;
    else if (t === 'flow-map-end' || t === 'flow-seq-end') flow = Math.max(0, flow - 1);
    else if (t === 'seq-item-ind' || t === 'explicit-key-ind' || t === 'map-value-ind') indicators++;
    if (flow + indent + indicators > max) return line;
    // Multi-line scalars and comments are one token: keep the line count right.
    if (t === 'scalar' || t === 'comment') for (let i = tok.indexOf('\n'); i !== -1; i = tok.indexOf('\n', i + 1)) line++;
  }
  return null;
}

function parseText(text: string, display: string, source: Omit<ManifestSource, 'line'>): ParsedManifests {
  const out: ParsedManifests = { objects: [], errors: [], files: [display] };
  const deep = nestingTooDeep(text);
  if (deep !== null) {
    out.errors.push(fileError(display, `nested more than ${MAX_NESTING_DEPTH} levels deep`, deep));
    return out;
  }
  const lc = new LineCounter();
  const docs = Array.from(new Composer(YAML_OPTIONS).compose(quotedAsSlices(new Parser(lc.addNewLine).parse(text))));
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      // The first error is the cause; later ones are usually its echoes.
      const err = doc.errors[0];
      if (err !== undefined) out.errors.push(fileError(display, err.message, lc.linePos(syntaxErrorPos(text, err.pos[0])).line));
      continue;
    }
    flattenScalars(doc);
    const ctx: DocContext = { display, source, doc, lc };
    let raw: unknown;
    try {
      raw = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      out.errors.push(fileError(display, errorMessage(err), lineOf(doc.contents, lc)));
      continue;
    }
    if (raw === null || raw === undefined) continue;
    if (!isPlainObject(raw)) {
      out.errors.push(
        fileError(display, `expected a Kubernetes object (a map with apiVersion and kind), got ${describeJSONValue(raw)}`, lineOf(doc.contents, lc)),
      );
      continue;
    }
    const kind = typeOf(ctx, raw, FieldPath.root(), out);
    if (kind === 'PodList' || kind === 'List') decodeList(ctx, raw, kind, out);
    else if (kind === 'Pod' || kind === 'ConfigMap' || kind === 'Secret') decodeObject(ctx, raw, kind, FieldPath.root(), out);
  }
  return out;
}

/**
 * The yaml library builds a double-quoted scalar a character at a time, as a
 * rope of one heap node per character. A double-quoted scalar with nothing
 * to unescape or fold (no backslash, no line break) means exactly its text,
 * as a single-quoted one without quotes inside does: handing it over as that
 * makes its value one slice. Same values, same offsets (so the same error
 * lines); a 2 MB pod of quoted env values peaks ~100 MB lower.
 */
function* quotedAsSlices(tokens: Generator<CST.Token>): Generator<CST.Token> {
  const plain = (t: CST.Token | undefined): void => {
    if (t?.type !== 'double-quoted-scalar' || t.source.length < 64 || !t.source.endsWith('"')) return;
    const inner = t.source.slice(1, -1);
    if (/[\\\r\n'"]/.test(inner)) return;
    (t as CST.FlowScalar).type = 'single-quoted-scalar';
    t.source = `'${inner}'`;
  };
  for (const tok of tokens) {
    if (tok.type === 'document') {
      plain(tok.value);
      CST.visit(tok, (item) => {
        plain(item.key ?? undefined);
        plain(item.value);
      });
    }
    yield tok;
  }
}

/**
 * The yaml library builds a double-quoted scalar a character at a time: its
 * value is a rope of one heap node per character (about 30 bytes each), and
 * the document is kept until validation has placed its errors. Flattening
 * every string value in place frees the ropes: a 2 MB pod of quoted env
 * values held 66 MB of heap before and 6 MB after. (Converting a string to a
 * number is the operation that flattens a V8 rope in place; the decoded pod
 * shares these same strings.)
 */
function flattenScalars(doc: Document): void {
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && node.value.length > 64) void Number(node.value);
    },
  });
}

/** Refuse binary data with one clear line instead of a YAML error about byte 0. */
function decodeText(buf: Buffer, display: string): string | ManifestError {
  if ((buf[0] === 0xff && buf[1] === 0xfe) || (buf[0] === 0xfe && buf[1] === 0xff)) {
    return fileError(display, 'manifest is UTF-16 encoded; save it as UTF-8');
  }
  const nul = buf.indexOf(0);
  if (nul !== -1) return fileError(display, `not a text manifest: binary data (NUL byte at offset ${nul})`);
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  } catch {
    return fileError(display, 'not a text manifest: it is not valid UTF-8');
  }
}

/**
 * Parse manifest text, e.g. the body fetched from a manifest URL
 * (`sourceName` is the URL, used in errors and as the pod source).
 */
export function parseManifestText(text: string, sourceName: string, sourceKind: 'file' | 'http' = 'http'): ParsedManifests {
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) {
    return { objects: [], errors: [sizeError(sourceName, Buffer.byteLength(text, 'utf8'))], files: [sourceName] };
  }
  if (text.includes('\0')) {
    return { objects: [], errors: [fileError(sourceName, 'not a text manifest: binary data (NUL character)')], files: [sourceName] };
  }
  return parseText(text.startsWith('\uFEFF') ? text.slice(1) : text, sourceName, { kind: sourceKind, path: sourceName });
}

/**
 * Read at most `limit` bytes: a file may grow after stat, or lie about its
 * size (procfs). The first read asks for the size stat gave plus one byte
 * (so a file of that size is read whole and its end seen in two reads);
 * later reads take up to 1 MiB at a time. Buffers are not zero-filled: only
 * the bytes read are kept. (Two zeroed 1 MiB buffers per file made reading
 * 30 small manifests cost 60 MB of memset and the garbage collections that
 * followed: loading them took 40-50 ms, now 20-30 ms; bench/README.md.)
 */
async function readAtMost(handle: FileHandle, limit: number, sizeHint: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  let want = Math.max(1, Math.min(sizeHint + 1, limit));
  while (total < limit) {
    const chunk = Buffer.allocUnsafe(Math.min(want, limit - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
    want = 1024 * 1024;
  }
  return Buffer.concat(chunks, total);
}

/** Read and decode one manifest file. Never throws for bad input: problems are in `errors`. */
export async function readManifestFile(file: string): Promise<ParsedManifests> {
  const failed = (error: ManifestError): ParsedManifests => ({ objects: [], errors: [error], files: [file] });
  const fail = (message: string, cause?: unknown): ParsedManifests => failed(fileError(file, message, undefined, cause));
  let size: number;
  try {
    // stat before open: opening a FIFO for reading would block.
    const st = await fs.stat(file);
    if (st.isDirectory()) return fail('is a directory, not a manifest file');
    if (!st.isFile()) return fail('not a regular file');
    size = st.size;
  } catch (err) {
    return fail(fsErrorReason(err), err);
  }
  if (size > MAX_MANIFEST_BYTES) return failed(sizeError(file, size));
  let buf: Buffer;
  try {
    const handle = await fs.open(file, 'r');
    try {
      buf = await readAtMost(handle, MAX_MANIFEST_BYTES + 1, size);
    } finally {
      await handle.close();
    }
  } catch (err) {
    return fail(fsErrorReason(err), err);
  }
  if (buf.length > MAX_MANIFEST_BYTES) return failed(sizeError(file, undefined));
  const text = decodeText(buf, file);
  if (text instanceof ManifestError) return failed(text);
  return parseText(text, file, { kind: 'file', path: path.resolve(file) });
}

/**
 * Read a static pod directory (see the module comment for which entries
 * count). A missing or unreadable directory is one error naming it.
 */
export async function readManifestDir(dir: string): Promise<ParsedManifests> {
  const out: ParsedManifests = { objects: [], errors: [], files: [] };
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const reason = code === 'ENOENT' ? 'manifest directory does not exist' : fsErrorReason(err);
    return { objects: [], errors: [fileError(dir, reason)], files: [dir] };
  }
  // Files are read a few at a time and merged in name order, as if read one
  // by one. Each is a stat, an open and reads on libuv's threads, and one
  // after another the main thread waited on each: loading 30 small
  // manifests took 67 ms, now 57; 110 took 141 ms, now 107 (median of 12,
  // cold process; bench/README.md, startup-30).
  const files = names.filter((n) => !n.startsWith('.')).sort().map((name) => path.join(dir, name));
  const results = await mapLimit(files, MANIFEST_READ_CONCURRENCY, (file) => readDirEntry(file));
  for (const one of results) if (one !== null) mergeInto(out, one);
  return out;
}

/** How many manifest files of a directory are read at once (libuv's default pool has 4 threads; a file may be 10 MiB). */
const MANIFEST_READ_CONCURRENCY = 4;

/** One entry of a manifest directory: its objects and errors, or null when it does not count (a subdirectory, not a regular file, removed while read). */
async function readDirEntry(file: string): Promise<ParsedManifests | null> {
  let st;
  try {
    st = await fs.stat(file);
  } catch (err) {
    // Listed, then removed before it could be read: gone, not broken (a
    // file put back since is seen by the next read).
    if ((err as { code?: unknown }).code === 'ENOENT' && (await removedWhileReading(file))) return null;
    return { objects: [], errors: [fileError(file, fsErrorReason(err))], files: [file] };
  }
  if (st.isDirectory()) {
    log.debug(`${file}: not descending into a subdirectory of the manifest directory`);
    return null;
  }
  if (!st.isFile()) {
    log.debug(`${file}: skipped, not a regular file`);
    return null;
  }
  const one = await readManifestFile(file);
  if (one.objects.length === 0 && one.errors.length > 0 && one.errors.every(isMissingFile) && (await removedWhileReading(file))) return null;
  return one;
}

// ------------------------------------------------------------- preparation

function mergeInto(into: ParsedManifests, from: ParsedManifests): void {
  into.objects.push(...from.objects);
  into.errors.push(...from.errors);
  into.files.push(...from.files);
}

/** Errors in reading order: by file, then line (stable, so field errors keep their order). */
/**
 * Errors by file, then by the line of the document they belong to; within
 * one object, in the order validation found them (as the API server lists
 * them: the volume whose path is invalid before the mount that names it),
 * so the first error shown is the cause, not an echo of it.
 */
function sortErrors(errors: ManifestError[], files: readonly string[], docLine: ReadonlyMap<ManifestError, number> = new Map()): ManifestError[] {
  const rank = new Map<string, number>();
  files.forEach((f, i) => {
    if (!rank.has(f)) rank.set(f, i);
  });
  const r = (e: ManifestError): number => rank.get(e.file) ?? files.length;
  const line = (e: ManifestError): number => docLine.get(e) ?? e.line ?? 0;
  return errors
    .map((e, i) => ({ e, i }))
    .sort((a, b) => r(a.e) - r(b.e) || line(a.e) - line(b.e) || a.i - b.i)
    .map(({ e }) => e);
}

export interface PrepareOptions {
  nodeName: string;
  /** Time for the kubernetes.io/config.seen annotation; defaults to now. */
  now?: Date;
}

function where(source: ManifestSource): string {
  return source.line === undefined ? source.path : `${source.path}:${source.line}`;
}

/**
 * Default, convert to static pods, validate and de-duplicate decoded
 * manifest objects. Objects with errors are left out; each error is one
 * ManifestError. Duplicates (same namespace and name) after the first are
 * errors too.
 */
export function prepareManifests(parsed: ParsedManifests, opts: PrepareOptions): ManifestSet {
  const set: ManifestSet = { pods: [], configMaps: [], secrets: [], errors: [...parsed.errors] };
  const seen = new Map<string, ManifestSource>();
  const now = opts.now ?? new Date();

  const docLine = new Map<ManifestError, number>();
  const report = (obj: ManifestObject, errs: readonly FieldError[]): void => {
    for (const e of errs) {
      const err = new ManifestError({ file: obj.display, line: obj.locate(e.path), fieldPath: e.path.under(obj.base).toString(), message: e.body });
      if (obj.source.line !== undefined) docLine.set(err, obj.source.line);
      set.errors.push(err);
    }
  };
  /** True when this is the first object of its kind with that namespace/name. */
  const first = (obj: ManifestObject, namespace: string, name: string): boolean => {
    const key = `${obj.kind}/${namespace}/${name}`;
    const previous = seen.get(key);
    if (previous === undefined) {
      seen.set(key, obj.source);
      return true;
    }
    const fieldPath = FieldPath.of('metadata', 'name');
    set.errors.push(
      new ManifestError({
        file: obj.display,
        line: obj.locate(fieldPath),
        fieldPath: fieldPath.under(obj.base).toString(),
        message: `Duplicate value: ${JSON.stringify(name)}: ${obj.kind} ${namespace}/${name} is already defined at ${where(previous)}`,
      }),
    );
    return false;
  };

  for (const obj of parsed.objects) {
    if (obj.kind === 'Pod') {
      const defaulted = applyPodDefaults(obj.object);
      const result = toStaticPod(defaulted, { nodeName: opts.nodeName, source: obj.source, seen: now });
      if (result.pod === undefined) {
        report(obj, result.errors);
        continue;
      }
      const errs = validatePod(result.pod);
      if (errs.length > 0) {
        report(obj, errs);
        continue;
      }
      const meta = result.pod.metadata ?? {};
      if (first(obj, meta.namespace ?? '', meta.name ?? '')) set.pods.push({ pod: result.pod, source: obj.source });
    } else if (obj.kind === 'ConfigMap') {
      const cm = withNamespace(obj.object);
      const errs = validateConfigMap(cm);
      if (errs.length > 0) report(obj, errs);
      else if (first(obj, cm.metadata?.namespace ?? '', cm.metadata?.name ?? '')) set.configMaps.push(cm);
    } else {
      const secret = withNamespace(obj.object);
      const errs = validateSecret(secret);
      if (errs.length > 0) report(obj, errs);
      else if (first(obj, secret.metadata?.namespace ?? '', secret.metadata?.name ?? '')) set.secrets.push(applySecretDefaults(secret));
    }
  }
  set.errors = sortErrors(set.errors, parsed.files, docLine);
  return set;
}

/** A copy with metadata.namespace set to `default` when empty, as the kubelet does for manifest pods. */
function withNamespace<T extends V1ConfigMap | V1Secret>(obj: T): T {
  const out = cloneModel(obj);
  out.metadata ??= {};
  if ((out.metadata.namespace ?? '') === '') out.metadata.namespace = DEFAULT_NAMESPACE;
  return out;
}

export interface LoadManifestsOptions {
  /** A static pod directory; a regular file here is read as a single manifest (as the kubelet allows). */
  dir?: string;
  /** Manifest files, read after the directory, in the order given. */
  files?: string[];
  /** A manifest fetched from a URL: its body and the URL (the pod source). Read last. */
  url?: { body: string; url: string };
  /** This node's name: pods are named `<name>-<nodeName>` and bound to it. */
  nodeName: string;
  /** Time for the kubernetes.io/config.seen annotation; defaults to now. */
  now?: Date;
}

/**
 * Everything: read the directory, files and URL body, decode strictly,
 * default, make static pods, validate, de-duplicate. Never rejects for bad
 * manifests (see `errors`); throws InputError only for an empty nodeName.
 */
export async function loadManifests(opts: LoadManifestsOptions): Promise<ManifestSet> {
  if (opts.nodeName.trim() === '') throw new InputError('node name is empty: static pods are named after the node');
  const parsed: ParsedManifests = { objects: [], errors: [], files: [] };
  const add = (p: ParsedManifests): void => mergeInto(parsed, p);
  if (opts.dir !== undefined) {
    const isFile = await fs.stat(opts.dir).then(
      (st) => st.isFile(),
      () => false,
    );
    add(isFile ? await readManifestFile(opts.dir) : await readManifestDir(opts.dir));
  }
  for (const file of opts.files ?? []) add(await readManifestFile(file));
  if (opts.url !== undefined) add(parseManifestText(opts.url.body, opts.url.url, 'http'));
  return prepareManifests(parsed, { nodeName: opts.nodeName, now: opts.now });
}
