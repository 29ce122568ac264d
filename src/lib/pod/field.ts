/**
 * Field paths and field errors, modelled on k8s.io/apimachinery's
 * util/validation/field package so that klet reports a bad manifest with the
 * same words as `kubectl apply` would: `spec.containers[1].name: Duplicate
 * value: "app"`. Paths keep their segments (not just the string) so the
 * manifest layer can map an error back to a line of the YAML source.
 */

/** One step of a field path: a struct field, a list index or a map key. */
export type PathSegment =
  | { readonly kind: 'field'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'key'; readonly key: string };

/** An immutable path into an object, printed the way the API server prints it. */
export class FieldPath {
  private constructor(readonly segments: readonly PathSegment[]) {}

  /** A path starting at the named top-level field(s): `FieldPath.of('spec', 'containers')`. */
  static of(...names: string[]): FieldPath {
    return new FieldPath([]).child(...names);
  }

  /** The empty path: errors about the whole object. */
  static root(): FieldPath {
    return new FieldPath([]);
  }

  child(...names: string[]): FieldPath {
    return new FieldPath([...this.segments, ...names.map((name) => ({ kind: 'field' as const, name }))]);
  }

  index(index: number): FieldPath {
    return new FieldPath([...this.segments, { kind: 'index', index }]);
  }

  key(key: string): FieldPath {
    return new FieldPath([...this.segments, { kind: 'key', key }]);
  }

  /** This path below `prefix` (used to report errors of a List item as `items[2].spec...`). */
  under(prefix: FieldPath): FieldPath {
    return new FieldPath([...prefix.segments, ...this.segments]);
  }

  get isRoot(): boolean {
    return this.segments.length === 0;
  }

  /** `spec.containers[0].resources.limits[cpu]`, as field.Path.String() does it. */
  toString(): string {
    let out = '';
    for (const s of this.segments) {
      if (s.kind === 'field') out += out === '' ? s.name : `.${s.name}`;
      else if (s.kind === 'index') out += `[${s.index}]`;
      else out += `[${s.key}]`;
    }
    return out;
  }
}

/**
 * The error kinds of field.ErrorType, with the text Go prints for each.
 * `unknown field` is what strict decoding reports for a misspelt field.
 */
export type FieldErrorType =
  | 'Required value'
  | 'Invalid value'
  | 'Duplicate value'
  | 'Unsupported value'
  | 'Not found'
  | 'Forbidden'
  | 'Too long'
  | 'Too many'
  | 'unknown field';

/** Kinds whose message never shows the offending value (as in Go's ErrorBody). */
const VALUELESS: ReadonlySet<FieldErrorType> = new Set(['Required value', 'Forbidden', 'Too long', 'unknown field']);

/** A validation or decoding error about one field. */
export class FieldError {
  constructor(
    readonly type: FieldErrorType,
    readonly path: FieldPath,
    /** The offending value; shown for Invalid/Duplicate/Unsupported/Not found. */
    readonly badValue: unknown,
    readonly detail: string = '',
  ) {}

  /** The field path as a string (`spec.containers[0].image`); empty for whole-object errors. */
  get field(): string {
    return this.path.toString();
  }

  /** Everything after the field path: `Invalid value: "Foo": a lowercase RFC 1123 ...`. */
  get body(): string {
    let s: string = this.type;
    if (!VALUELESS.has(this.type)) s += `: ${formatValue(this.badValue)}`;
    if (this.detail !== '') s += `: ${this.detail}`;
    return s;
  }

  toString(): string {
    return this.field === '' ? this.body : `${this.field}: ${this.body}`;
  }
}

/** A value the way Go's %q / %v show it in field errors; long values are cut. */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(truncate(value));
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  try {
    return truncate(JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}

function truncate(s: string): string {
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

// Builders named after their Go counterparts (field.Required, field.Invalid, ...).

export function required(path: FieldPath, detail = ''): FieldError {
  return new FieldError('Required value', path, undefined, detail);
}
export function invalid(path: FieldPath, value: unknown, detail: string): FieldError {
  return new FieldError('Invalid value', path, value, detail);
}
export function duplicate(path: FieldPath, value: unknown): FieldError {
  return new FieldError('Duplicate value', path, value);
}
export function notSupported(path: FieldPath, value: unknown, valid: readonly string[]): FieldError {
  const detail = valid.length > 0 ? `supported values: ${valid.map((v) => JSON.stringify(v)).join(', ')}` : '';
  return new FieldError('Unsupported value', path, value, detail);
}
export function notFound(path: FieldPath, value: unknown): FieldError {
  return new FieldError('Not found', path, value);
}
export function forbidden(path: FieldPath, detail: string): FieldError {
  return new FieldError('Forbidden', path, undefined, detail);
}
export function tooLong(path: FieldPath, maxLength: number): FieldError {
  return new FieldError('Too long', path, undefined, `must have at most ${maxLength} bytes`);
}
export function tooMany(path: FieldPath, actual: number, max: number): FieldError {
  return new FieldError('Too many', path, actual, `must have at most ${max} items`);
}
export function unknownField(path: FieldPath): FieldError {
  return new FieldError('unknown field', path, undefined);
}
