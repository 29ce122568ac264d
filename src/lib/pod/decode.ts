/**
 * Strict decoding of plain JSON (from YAML or JSON manifests) into
 * @kubernetes/client-node models, the way the API server decodes a request
 * with `fieldValidation=Strict`: unknown fields and type mismatches are
 * errors that name the field path, while everything the API server accepts
 * is accepted (null anywhere means "unset", quantities may be numbers,
 * int-or-string ports may be either). Quantities come out in canonical
 * form ("0.5" -> "500m"), the form the API server stores and returns.
 *
 * The schema is not hand-written: it is the type metadata the client-node
 * code generator puts on every model class (`attributeTypeMap` entries with
 * name/baseName/type/format), so it follows the Kubernetes version of the
 * installed client. The walk produces a cleaned wire-form object which
 * ObjectSerializer.deserialize turns into model instances (V1Pod, ...).
 */
// The models' metadata comes from gen/k8s-schema.json, extracted at build
// time from client-node's generated models (scripts/gen-k8s-schema.js):
// importing client-node's ObjectSerializer would load ~1000 model modules
// (~0.35 s) on every pod command. Values are plain objects shaped like the
// client-node models (camelCase fields, Dates), as ObjectSerializer makes them.
import { createRequire } from 'node:module';
import { type FieldError, FieldPath, invalid, unknownField } from './field.js';
import { Quantity, QuantityError } from './quantity.js';

/** One entry of a generated model's `attributeTypeMap`. */
export interface AttributeType {
  /** Property name on the TypeScript model (camelCase, `_continue` for `continue`). */
  name: string;
  /** Field name on the wire (JSON/YAML). */
  baseName: string;
  /** `string`, `number`, `boolean`, `Date`, `any`, `IntOrString`, `Array<T>`, `{ [key: string]: T; }` or a model name. */
  type: string;
  /** OpenAPI format: `int32`, `int64`, `byte`, `date-time`, `int-or-string` or empty. */
  format: string;
}

const schema = createRequire(import.meta.url)('./gen/k8s-schema.json') as Record<string, AttributeType[]>;
const attributeCache = new Map<string, ReadonlyMap<string, AttributeType> | null>();

/** The attributes of a client-node model by wire name, or undefined when `type` is not a model klet decodes. */
export function modelAttributes(type: string): ReadonlyMap<string, AttributeType> | undefined {
  let cached = attributeCache.get(type);
  if (cached === undefined) {
    const attrs = Object.hasOwn(schema, type) ? schema[type] : undefined;
    cached = attrs ? new Map(attrs.map((a) => [a.baseName, a])) : null;
    attributeCache.set(type, cached);
  }
  return cached ?? undefined;
}

const ARRAY = /^Array<(.*)>$/;
const MAP = /^\{ \[key: string\]: (.*); \}$/;

/**
 * ObjectSerializer.deserialize over the schema: wire names → model names,
 * date-time strings → Date; what the API server sends, as client-node's
 * generated clients hand it over (lib/kube/node-api.ts). Not checked: the
 * server's answers are trusted as client-node trusts them.
 */
export function deserializeModel(data: unknown, type: string): unknown {
  return decoderFor(type)(data);
}

type Decoder = (data: unknown) => unknown;

/**
 * One decoder per type name, made on first use: a watch decodes every pod of
 * a 110-pod start several times, and matching each value's type name against
 * the Array/map patterns again was most of that work (bench/README.md,
 * api-start-110). Element and field decoders are looked up on first call, so
 * self-referencing models (V1JSONSchemaProps) need no special case.
 */
const decoders = new Map<string, Decoder>();

function decoderFor(type: string): Decoder {
  const known = decoders.get(type);
  if (known !== undefined) return known;
  const decoder = makeDecoder(type);
  decoders.set(type, decoder);
  return decoder;
}

/** A decoder for `type` that resolves its inner decoder on first use. */
function lazy(type: string): Decoder {
  let inner: Decoder | undefined;
  return (data) => (inner ??= decoderFor(type))(data);
}

function makeDecoder(type: string): Decoder {
  const arr = ARRAY.exec(type);
  if (arr) {
    const elem = lazy(arr[1] as string);
    return (data) => (data === undefined || data === null || !Array.isArray(data) ? data : data.map(elem));
  }
  const map = MAP.exec(type);
  if (map) {
    const value = lazy(map[1] as string);
    return (data) => {
      if (!isPlainObject(data)) return data;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(data)) out[k] = value(data[k]);
      return out;
    };
  }
  if (type === 'Date') return (data) => (typeof data === 'string' || typeof data === 'number' ? new Date(data) : data);
  const attrs = Object.hasOwn(schema, type) ? schema[type] : undefined;
  if (!attrs) return (data) => data;
  const fields = attrs.map((a) => ({ wire: a.baseName, name: a.name, decode: lazy(a.type) }));
  return (data) => {
    if (!isPlainObject(data)) return data;
    const out: Record<string, unknown> = {};
    for (const f of fields) {
      const raw = data[f.wire];
      if (raw === undefined) continue;
      const v = raw === null ? null : f.decode(raw);
      if (v !== undefined) out[f.name] = v;
    }
    return out;
  };
}

/** ObjectSerializer.serialize over the schema: model names → wire names, Date → RFC 3339. */
function toWire(data: unknown, type: string, format = ''): unknown {
  if (data === undefined || data === null) return data;
  const arr = ARRAY.exec(type);
  if (arr) return Array.isArray(data) ? data.map((d) => toWire(d, arr[1] as string, format)) : data;
  const map = MAP.exec(type);
  if (map) {
    if (!isPlainObject(data)) return data;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) out[k] = toWire(v, map[1] as string, format);
    return out;
  }
  if (type === 'Date') {
    if (!(data instanceof Date)) return data;
    return format === 'date' ? data.toISOString().slice(0, 10) : data.toISOString();
  }
  const attrs = Object.hasOwn(schema, type) ? schema[type] : undefined;
  if (!attrs || typeof data !== 'object') return data;
  const src = data as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const a of attrs) {
    const v = toWire(src[a.name], a.type, a.format);
    if (v !== undefined) out[a.baseName] = v;
  }
  return out;
}

/**
 * Fields that are resource.Quantity in the Go API although the generated
 * TypeScript models type them as strings: there the API server accepts a
 * JSON number too (`cpu: 1`, `memory: 1e9`) and rejects a malformed value
 * at decode time.
 */
const QUANTITY_FIELDS: ReadonlySet<string> = new Set([
  'V1ResourceRequirements.limits',
  'V1ResourceRequirements.requests',
  'V1VolumeResourceRequirements.limits',
  'V1VolumeResourceRequirements.requests',
  'V1PodSpec.overhead',
  'V1EmptyDirVolumeSource.sizeLimit',
  'V1ResourceFieldSelector.divisor',
  'V1PodStatus.allocatedResources',
  'V1ContainerStatus.allocatedResources',
  'V1NodeAllocatableResourceClaimStatus.resources',
]);

const ARRAY_RE = /^Array<(.+)>$/;
const MAP_RE = /^\{ \[key: string\]: (.+); \}$/;
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|z|[+-]\d{2}:\d{2})$/;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** Marks a value to leave out of the output (null or absent in the input). */
const OMIT = Symbol('omit');
type Out = unknown;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** "a string", "a list", ... for type error messages. */
export function describeJSONValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number';
  if (typeof value === 'boolean') return 'a boolean';
  return `a ${typeof value}`;
}

function expectedFor(type: string, format: string): string {
  if (ARRAY_RE.test(type)) return 'a list';
  if (MAP_RE.test(type)) return 'a map';
  switch (type) {
    case 'string':
      return 'a string';
    case 'number':
      return format === 'int32' || format === 'int64' ? 'an integer' : 'a number';
    case 'boolean':
      return 'a boolean (true or false)';
    case 'Date':
      return 'an RFC 3339 date-time string';
    case 'IntOrString':
      return 'an integer or a string';
    default:
      return 'a map';
  }
}

/** Go's base64.StdEncoding as encoding/json uses it for []byte: padded, CR/LF ignored. */
export function base64Error(text: string): string | undefined {
  const s = text.replace(/[\r\n]/g, '');
  const bad = /[^A-Za-z0-9+/=]/.exec(s);
  if (bad !== null) return `illegal base64 data at input byte ${bad.index}`;
  const pad = s.indexOf('=');
  if (pad !== -1 && (!/^={1,2}$/.test(s.slice(pad)) || s.length % 4 !== 0)) return `illegal base64 data at input byte ${pad}`;
  if (s.length % 4 !== 0) return `illegal base64 data at input byte ${s.length - (s.length % 4)}`;
  return undefined;
}

class Walker {
  readonly errors: FieldError[] = [];

  private typeError(path: FieldPath, value: unknown, type: string, format: string): typeof OMIT {
    this.errors.push(invalid(path, value, `expected ${expectedFor(type, format)}, got ${describeJSONValue(value)}`));
    return OMIT;
  }

  /** Go's zero value, for nulls inside lists and maps (json.Unmarshal does the same). */
  private zero(type: string): Out {
    if (ARRAY_RE.test(type)) return [];
    if (MAP_RE.test(type)) return {};
    switch (type) {
      case 'string':
        return '';
      case 'number':
      case 'IntOrString':
        return 0;
      case 'boolean':
        return false;
      case 'any':
        return null;
      case 'Date':
        return OMIT;
      default:
        return {};
    }
  }

  walk(value: unknown, type: string, format: string, path: FieldPath, quantity: boolean): Out {
    if (value === null || value === undefined) return OMIT;
    const nullable = /^(.+) \| (null|undefined)$/.exec(type);
    if (nullable !== null) return this.walk(value, nullable[1] as string, format, path, quantity);

    const arrayOf = ARRAY_RE.exec(type);
    if (arrayOf !== null) {
      if (!Array.isArray(value)) return this.typeError(path, value, type, format);
      const itemType = arrayOf[1] as string;
      const out: Out[] = [];
      value.forEach((item: unknown, i) => {
        const v = item === null ? this.zero(itemType) : this.walk(item, itemType, format, path.index(i), quantity);
        if (v !== OMIT) out.push(v);
      });
      return out;
    }

    const mapOf = MAP_RE.exec(type);
    if (mapOf !== null) {
      if (!isPlainObject(value)) return this.typeError(path, value, type, format);
      const valueType = mapOf[1] as string;
      const out: Record<string, Out> = {};
      for (const [k, item] of Object.entries(value)) {
        const v = item === null ? this.zero(valueType) : this.walk(item, valueType, format, path.key(k), quantity);
        if (v !== OMIT) out[k] = v;
      }
      return out;
    }

    switch (type) {
      case 'string':
        return this.string(value, format, path, quantity);
      case 'number':
        return this.number(value, format, path);
      case 'boolean':
        return typeof value === 'boolean' ? value : this.typeError(path, value, type, format);
      case 'Date':
        if (typeof value !== 'string') return this.typeError(path, value, type, format);
        if (!RFC3339_RE.test(value) || Number.isNaN(Date.parse(value))) {
          this.errors.push(invalid(path, value, 'expected an RFC 3339 date-time (e.g. 2006-01-02T15:04:05Z)'));
          return OMIT;
        }
        return value;
      case 'IntOrString':
        if (typeof value === 'string') return value;
        if (typeof value === 'number') return this.number(value, 'int32', path);
        return this.typeError(path, value, type, format);
      case 'any':
        return value;
      default:
        return this.model(value, type, path);
    }
  }

  private string(value: unknown, format: string, path: FieldPath, quantity: boolean): Out {
    if (quantity && (typeof value === 'string' || typeof value === 'number')) {
      // Stored in canonical form, as the API server does: `cpu: 0.5` reads back as "500m".
      try {
        return Quantity.from(value).toString();
      } catch (err) {
        if (!(err instanceof QuantityError)) throw err;
        this.errors.push(invalid(path, value, err.message));
        return OMIT;
      }
    }
    if (typeof value !== 'string') return this.typeError(path, value, 'string', format);
    if (format === 'byte') {
      const err = base64Error(value);
      if (err !== undefined) {
        this.errors.push(invalid(path, '<binary>', err));
        return OMIT;
      }
    }
    return value;
  }

  private number(value: unknown, format: string, path: FieldPath): Out {
    if (typeof value !== 'number' || !Number.isFinite(value)) return this.typeError(path, value, 'number', format);
    if (format === 'int32' || format === 'int64') {
      if (!Number.isInteger(value)) return this.typeError(path, value, 'number', format);
      if (format === 'int32' && (value < INT32_MIN || value > INT32_MAX)) {
        this.errors.push(invalid(path, value, 'out of range for a 32-bit integer'));
        return OMIT;
      }
      if (!Number.isSafeInteger(value)) {
        this.errors.push(invalid(path, value, 'integer too large to represent exactly'));
        return OMIT;
      }
    }
    return value;
  }

  private model(value: unknown, type: string, path: FieldPath): Out {
    const attrs = modelAttributes(type);
    // A type the metadata does not describe: keep the value as it is.
    if (attrs === undefined) return value;
    if (!isPlainObject(value)) return this.typeError(path, value, type, '');
    const out: Record<string, Out> = {};
    for (const [key, item] of Object.entries(value)) {
      const attr = attrs.get(key);
      if (attr === undefined) {
        this.errors.push(unknownField(path.child(key)));
        continue;
      }
      const v = this.walk(item, attr.type, attr.format, path.child(key), QUANTITY_FIELDS.has(`${type}.${attr.name}`));
      if (v !== OMIT) out[key] = v;
    }
    return out;
  }
}

export interface DecodeResult<T> {
  /** The decoded model; undefined when there are errors. */
  value: T | undefined;
  errors: FieldError[];
}

/**
 * Strictly decode `raw` (parsed JSON/YAML) as the client-node model `type`
 * (e.g. 'V1Pod'). All errors are collected; paths are reported below `base`.
 */
export function decodeModel<T>(raw: unknown, type: string, base: FieldPath = FieldPath.root()): DecodeResult<T> {
  if (modelAttributes(type) === undefined) throw new Error(`decodeModel: ${type} is not a @kubernetes/client-node model`);
  const walker = new Walker();
  const clean = walker.walk(raw, type, '', base, false);
  if (walker.errors.length > 0) return { value: undefined, errors: walker.errors };
  const value = decoderFor(type)(clean === OMIT ? {} : clean) as T;
  return { value, errors: [] };
}

/** The wire form of a model (Dates as RFC 3339 strings, wire field names), for hashing and printing. */
export function serializeModel(value: unknown, type: string): unknown {
  return toWire(value, type);
}
