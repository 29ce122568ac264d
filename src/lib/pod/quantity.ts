/**
 * Kubernetes resource quantities ("100m", "128Mi", "1e3", "0.5"), parsed
 * the way k8s.io/apimachinery/pkg/api/resource.ParseQuantity does it, with
 * exact arithmetic (bigint) so that `requests <= limits` never suffers from
 * floating point: 0.1 + 0.2 style surprises would wrongly reject pods.
 *
 * A quantity is held as `unscaled * 10^scale`. Like Go, values finer than a
 * nano-unit are rounded up (away from zero) to 1n, binary-suffixed values
 * above 2^63-1 are capped, and toString() gives Go's canonical form
 * ("1000" -> "1k", "0.5" -> "500m", "1024Mi" -> "1Gi").
 */
import { InputError } from '../errors.js';

export type QuantityFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';

/** The messages of resource.ErrFormatWrong / ErrSuffix / ErrNumeric. */
export const QUANTITY_FORMAT_ERROR =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
export const QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix";
export const QUANTITY_NUMERIC_ERROR = 'unable to parse numeric part of quantity';

export class QuantityError extends InputError {
  override readonly code: string = 'INVALID_QUANTITY';
}

const DECIMAL_SUFFIXES: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIXES: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_BY_POWER = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const SUFFIX_CHARS = 'eEinumkKMGTP';
const NANO_SCALE = -9;
const MAX_INT64 = (1n << 63n) - 1n;

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** Integer division rounding away from zero (inf.RoundUp). */
function divAwayFromZero(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b === 0n ? q : a < 0n ? q - 1n : q + 1n;
}

function abs(a: bigint): bigint {
  return a < 0n ? -a : a;
}

interface ParsedString {
  positive: boolean;
  num: string;
  denom: string;
  suffix: string;
}

/** Port of resource.parseQuantityString: split sign, digits, fraction and suffix. */
function splitQuantity(str: string): ParsedString {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') {
    pos++;
  }
  // Leading zeros; a string of only zeros (or only a sign) is zero.
  while (str[pos] === '0') pos++;
  if (pos >= end) return { positive, num: '0', denom: '', suffix: '' };

  let i = pos;
  while (isDigit(str[i])) i++;
  let num = str.slice(pos, i);
  pos = i;
  if (pos >= end) return { positive, num, denom: '', suffix: '' };
  if (num === '') num = '0';

  let denom = '';
  if (str[pos] === '.') {
    pos++;
    i = pos;
    while (isDigit(str[i])) i++;
    denom = str.slice(pos, i);
    pos = i;
    if (pos >= end) return { positive, num, denom, suffix: '' };
  }

  const suffixStart = pos;
  i = pos;
  while (i < end && SUFFIX_CHARS.includes(str[i] as string)) i++;
  if (i >= end) return { positive, num, denom, suffix: str.slice(suffixStart) };
  pos = i;
  if (str[pos] === '-' || str[pos] === '+') pos++;
  i = pos;
  while (isDigit(str[i])) i++;
  if (i >= end) return { positive, num, denom, suffix: str.slice(suffixStart) };
  throw new QuantityError(QUANTITY_FORMAT_ERROR);
}

/** resource.suffixer.interpret: base, exponent and format of a suffix. */
function interpretSuffix(suffix: string): { base: 2 | 10; exponent: number; format: QuantityFormat } {
  const dec = DECIMAL_SUFFIXES[suffix];
  if (dec !== undefined) return { base: 10, exponent: dec, format: 'DecimalSI' };
  const bin = BINARY_SUFFIXES[suffix];
  if (bin !== undefined) return { base: 2, exponent: bin, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const exp = suffix.slice(1);
    // strconv.ParseInt(s, 10, 32): optional sign, decimal digits, int32 range.
    if (/^[+-]?\d+$/.test(exp)) {
      const n = Number(exp);
      if (n >= -(2 ** 31) && n < 2 ** 31) return { base: 10, exponent: n, format: 'DecimalExponent' };
    }
  }
  throw new QuantityError(QUANTITY_SUFFIX_ERROR);
}

export class Quantity {
  private constructor(
    /** The value is unscaled * 10^scale. */
    readonly unscaled: bigint,
    readonly scale: number,
    /** How the quantity was written; decides the suffix family of toString(). */
    readonly format: QuantityFormat,
  ) {}

  /** Parse a quantity; throws QuantityError with resource.ParseQuantity's message. */
  static parse(text: string): Quantity {
    if (text.length === 0) throw new QuantityError(QUANTITY_FORMAT_ERROR);
    const { positive, num, denom, suffix } = splitQuantity(text);
    const { base, exponent, format: parsedFormat } = interpretSuffix(suffix);
    let format = parsedFormat;
    const digits = num + denom;
    if (!/^\d+$/.test(digits)) throw new QuantityError(QUANTITY_NUMERIC_ERROR);
    let unscaled = BigInt(digits);
    let scale = -denom.length;
    if (base === 10) scale += exponent;
    else unscaled <<= BigInt(exponent);

    // Round finer-than-nano values up to 1n: "if you want some resources,
    // you should get some resources" (apimachinery's comment).
    if (unscaled !== 0n && scale < NANO_SCALE) {
      unscaled = divAwayFromZero(unscaled, pow10(NANO_SCALE - scale));
      scale = NANO_SCALE;
    }
    if (format === 'BinarySI') {
      if (compareScaled(unscaled, scale, MAX_INT64, 0) > 0) {
        unscaled = MAX_INT64;
        scale = 0;
      } else if (unscaled !== 0n && compareScaled(unscaled, scale, 1n, 0) < 0) {
        format = 'DecimalSI';
      }
    }
    return new Quantity(positive ? unscaled : -unscaled, scale, format);
  }

  /** Parse a quantity written as a YAML/JSON number or string (the API accepts both). */
  static from(value: string | number): Quantity {
    return Quantity.parse(typeof value === 'number' ? String(value) : value);
  }

  get isZero(): boolean {
    return this.unscaled === 0n;
  }

  sign(): -1 | 0 | 1 {
    return this.unscaled === 0n ? 0 : this.unscaled < 0n ? -1 : 1;
  }

  /** -1, 0 or 1 as this is less than, equal to or greater than `other`. */
  cmp(other: Quantity): -1 | 0 | 1 {
    return compareScaled(this.unscaled, this.scale, other.unscaled, other.scale);
  }

  /** The value at 10^scale, rounded away from zero (resource.Quantity.ScaledValue). */
  scaledValue(scale: number): bigint {
    const shift = this.scale - scale;
    if (shift >= 0) return this.unscaled * pow10(shift);
    return divAwayFromZero(this.unscaled, pow10(-shift));
  }

  /** Whole units, rounded up (Go's Value()): CPU "100m" -> 1, memory "1Ki" -> 1024. */
  value(): number {
    return Number(this.scaledValue(0));
  }

  /** Thousandths, rounded up (Go's MilliValue()): CPU "100m" -> 100, "1" -> 1000. */
  milliValue(): number {
    return Number(this.scaledValue(-3));
  }

  /** Approximate value as a float, for display and ratios only. */
  toNumber(): number {
    return Number(this.unscaled) * 10 ** this.scale;
  }

  /** Go's canonical string: "100m", "1k", "128Mi", "1500m", "1e3". */
  toString(): string {
    if (this.unscaled === 0n) return '0';
    let format = this.format;
    if (format === 'BinarySI') {
      const small = compareScaled(abs(this.unscaled), this.scale, 1024n, 0) < 0;
      const whole = this.scale >= 0 || this.unscaled % pow10(-this.scale) === 0n;
      if (small || !whole) format = 'DecimalSI';
    }
    if (format === 'BinarySI') {
      let v = this.scaledValue(0);
      let power = 0;
      while (power < BINARY_BY_POWER.length - 1 && v % 1024n === 0n) {
        v /= 1024n;
        power++;
      }
      return `${v}${BINARY_BY_POWER[power]}`;
    }
    let mantissa = this.unscaled;
    let exponent = this.scale;
    while (mantissa % 10n === 0n) {
      mantissa /= 10n;
      exponent++;
    }
    // Make the exponent a multiple of 3 (JS % truncates like Go's).
    const r = exponent % 3;
    if (r === 1 || r === -2) {
      mantissa *= 10n;
      exponent -= 1;
    } else if (r === 2 || r === -1) {
      mantissa *= 100n;
      exponent -= 2;
    }
    if (format === 'DecimalExponent') return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
    const suffix = DECIMAL_BY_EXPONENT.get(exponent);
    return suffix === undefined ? `${mantissa}e${exponent}` : `${mantissa}${suffix}`;
  }

  toJSON(): string {
    return this.toString();
  }
}

function compareScaled(a: bigint, aScale: number, b: bigint, bScale: number): -1 | 0 | 1 {
  const min = Math.min(aScale, bScale);
  const x = a * pow10(aScale - min);
  const y = b * pow10(bScale - min);
  return x === y ? 0 : x < y ? -1 : 1;
}

/** Quantity.parse for callers that prefer a function. */
export function parseQuantity(text: string | number): Quantity {
  return Quantity.from(text);
}

/** The parse error message for `text`, or undefined when it is a valid quantity. */
export function quantityError(text: string | number): string | undefined {
  try {
    Quantity.from(text);
    return undefined;
  } catch (err) {
    if (err instanceof QuantityError) return err.message;
    throw err;
  }
}
