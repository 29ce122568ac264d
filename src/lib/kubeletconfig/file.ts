/**
 * Reading a KubeletConfiguration file (--config, as kubeadm writes
 * /var/lib/kubelet/config.yaml): YAML (or JSON) with apiVersion
 * kubelet.config.k8s.io/v1beta1 and kind KubeletConfiguration. Every value
 * klet reads is checked for its shape here (errors name file:line and the
 * field path); an unknown field is an error; a known field klet does not
 * implement is a warning. Zero values (0, "", 0s) mean "not set", as the
 * kubelet's defaulting reads them. Relative paths are taken relative to the
 * file's directory, as the kubelet resolves them.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isMap, isPair, isScalar, LineCounter, parseDocument, type Node, type Pair, type YAMLMap } from 'yaml';
import { InputError, errorMessage } from '../errors.js';
import { parseDuration } from '../util/duration.js';
import { API_VERSION, FILE_FIELDS, type FieldKind, KIND, NOT_IMPLEMENTED, STRUCTS } from './schema.js';

/** A value read from the file, where it was. */
export interface FileValue {
  value: unknown;
  line: number;
}

export interface ConfigFile {
  path: string;
  /** The fields klet reads that the file sets (zero values left out), by field path. */
  values: ReadonlyMap<string, FileValue>;
  /** Known fields the file sets that klet does not implement, with their lines. */
  notImplemented: readonly FileValue[];
}

/** Read and check a KubeletConfiguration file. */
export async function readConfigFile(file: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory, not a KubeletConfiguration file' : errorMessage(err)}`, { input: 'config' });
  }
  return parseConfigFile(text, file);
}

/** Check the text of a KubeletConfiguration file named `file` (pure). */
export function parseConfigFile(text: string, file: string): ConfigFile {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const lineOf = (node: Node | null | undefined): number => (node?.range ? lines.linePos(node.range[0]).line : 1);
  const err = (line: number, message: string) => new InputError(`${file}:${line}: ${message}`);
  const first = doc.errors[0];
  if (first !== undefined) {
    throw err(lines.linePos(first.pos[0]).line, `not valid YAML: ${first.message.split('\n')[0]}`);
  }
  const root = doc.contents;
  if (root === null || (isScalar(root) && (root.value === null || root.value === ''))) {
    throw err(1, `empty: not a ${KIND} (apiVersion ${API_VERSION})`);
  }
  if (!isMap(root)) throw err(lineOf(root), `not a ${KIND}: expected a mapping of fields`);
  const top = new Map<string, Pair>();
  for (const pair of root.items) top.set(keyOf(pair, file, lines), pair);
  const apiVersion = top.get('apiVersion');
  const kind = top.get('kind');
  if (kind === undefined || scalarOf(kind) !== KIND) {
    throw err(kind ? lineOf(kind.key as Node) : 1, `kind ${kind ? JSON.stringify(scalarOf(kind)) : 'missing'}: expected ${KIND}`);
  }
  if (apiVersion === undefined || scalarOf(apiVersion) !== API_VERSION) {
    throw err(apiVersion ? lineOf(apiVersion.key as Node) : 1, `apiVersion ${apiVersion ? JSON.stringify(scalarOf(apiVersion)) : 'missing'}: expected ${API_VERSION}`);
  }
  const values = new Map<string, FileValue>();
  const notImplemented: FileValue[] = [];
  const dir = path.dirname(file);
  const walk = (map: YAMLMap, prefix: string): void => {
    for (const pair of map.items) {
      const key = keyOf(pair, file, lines);
      const fieldPath = prefix === '' ? key : `${prefix}.${key}`;
      const valueNode = pair.value as Node | null;
      const line = lineOf(pair.key as Node);
      if (prefix === '' && (key === 'apiVersion' || key === 'kind')) continue;
      const structFields = STRUCTS[fieldPath];
      if (structFields !== undefined) {
        if (valueNode === null || (isScalar(valueNode) && valueNode.value === null)) continue;
        if (!isMap(valueNode)) throw err(line, `${fieldPath}: expected a mapping of ${structFields.join(', ')}`);
        walk(valueNode, fieldPath);
        continue;
      }
      const kind = FILE_FIELDS[fieldPath];
      if (kind !== undefined) {
        const value = convert(kind, valueNode?.toJSON() ?? null, (why) => err(line, `${fieldPath}: ${why}`));
        if (value !== undefined) values.set(fieldPath, { value: kind === 'path' && !path.isAbsolute(value as string) ? path.join(dir, value as string) : value, line });
        continue;
      }
      if (prefix === '' && NOT_IMPLEMENTED.includes(key)) {
        if (!isZero(valueNode?.toJSON() ?? null)) notImplemented.push({ value: fieldPath, line });
        continue;
      }
      throw err(line, `unknown field "${fieldPath}" (not a field of ${API_VERSION} ${KIND})`);
    }
  };
  walk(root, '');
  return { path: file, values, notImplemented };
}

function keyOf(pair: unknown, file: string, lines: LineCounter): string {
  const key = isPair(pair) ? pair.key : undefined;
  if (isScalar(key) && typeof key.value === 'string') return key.value;
  const line = isScalar(key) && key.range ? lines.linePos(key.range[0]).line : 1;
  throw new InputError(`${file}:${line}: field name ${JSON.stringify(isScalar(key) ? key.value : String(key))}: not a string`);
}

function scalarOf(pair: Pair): unknown {
  return isScalar(pair.value) ? pair.value.value : undefined;
}

/** null, 0, "", false-free empties: what the kubelet's defaulting takes as "not set". */
function isZero(v: unknown): boolean {
  if (v === null || v === undefined || v === 0 || v === '' || v === '0s' || v === '0') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') return Object.values(v).every(isZero);
  return false;
}

/** A field's value checked against its kind; undefined for a zero value (not set). */
function convert(kind: FieldKind, v: unknown, bad: (why: string) => InputError): unknown {
  const str = (x: unknown, what: string): string => {
    if (typeof x === 'string') return x;
    if (typeof x === 'number' || typeof x === 'boolean') return String(x);
    throw bad(`${what}: expected a string, got ${JSON.stringify(x)}`);
  };
  switch (kind) {
    case 'bool':
    case 'plainBool':
      if (v === null) return undefined;
      if (typeof v !== 'boolean') throw bad(`expected true or false, got ${JSON.stringify(v)}`);
      return v;
    case 'string':
    case 'path':
      if (v === null || v === '') return undefined;
      if (typeof v !== 'string') throw bad(`expected a string, got ${JSON.stringify(v)}`);
      return v;
    case 'intPtr':
      if (v === null) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(`expected an integer, got ${JSON.stringify(v)}`);
      return v;
    case 'int':
      if (v === null || v === 0) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(`expected an integer, got ${JSON.stringify(v)}`);
      return v;
    case 'durationPtr':
    case 'duration': {
      if (v === null || v === '' || (v === 0 && kind === 'duration')) return undefined;
      if (typeof v !== 'string') throw bad(`expected a duration such as 20s or 1m0s, got ${JSON.stringify(v)}`);
      const ms = parseDuration(v);
      if (ms === null || ms < 0) throw bad(`"${v}": not a duration (e.g. 20s, 1m0s)`);
      return ms === 0 && kind === 'duration' ? undefined : ms;
    }
    case 'strings':
      if (v === null) return undefined;
      if (!Array.isArray(v)) throw bad(`expected a list of strings, got ${JSON.stringify(v)}`);
      return v.length === 0 ? undefined : v.map((x, i) => str(x, `[${i}]`));
    case 'int32s':
      if (v === null) return undefined;
      if (!Array.isArray(v)) throw bad(`expected a list of integers, got ${JSON.stringify(v)}`);
      return v.length === 0
        ? undefined
        : v.map((x: unknown, i) => {
            if (typeof x !== 'number' || !Number.isInteger(x) || x < -2147483648 || x > 2147483647) throw bad(`[${i}]: expected a 32-bit integer, got ${JSON.stringify(x)}`);
            return x;
          });
    case 'stringMap':
      if (v === null) return undefined;
      if (typeof v !== 'object' || Array.isArray(v)) throw bad(`expected a mapping of names to values, got ${JSON.stringify(v)}`);
      return Object.keys(v).length === 0 ? undefined : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, str(x, k)]));
    case 'headers':
      if (v === null) return undefined;
      if (typeof v !== 'object' || Array.isArray(v)) throw bad(`expected a mapping of header names to lists of values, got ${JSON.stringify(v)}`);
      return Object.keys(v).length === 0
        ? undefined
        : Object.fromEntries(
            Object.entries(v).map(([k, x]) => {
              if (!Array.isArray(x)) throw bad(`${k}: expected a list of values, got ${JSON.stringify(x)}`);
              return [k, x.map((y, i) => str(y, `${k}[${i}]`))];
            }),
          );
    case 'taints':
      if (v === null) return undefined;
      if (!Array.isArray(v)) throw bad(`expected a list of taints (key, value, effect), got ${JSON.stringify(v)}`);
      return v.length === 0
        ? undefined
        : v.map((t: unknown, i) => {
            if (typeof t !== 'object' || t === null || Array.isArray(t)) throw bad(`[${i}]: expected a taint (key, value, effect)`);
            const unknown = Object.keys(t).find((k) => !['key', 'value', 'effect', 'timeAdded'].includes(k));
            if (unknown !== undefined) throw bad(`[${i}]: unknown field "${unknown}" (a taint has key, value, effect, timeAdded)`);
            const o = t as Record<string, unknown>;
            return { key: str(o.key ?? '', `[${i}].key`), ...(o.value !== undefined && o.value !== null ? { value: str(o.value, `[${i}].value`) } : {}), effect: str(o.effect ?? '', `[${i}].effect`) };
          });
  }
}
