import { describe, expect, it } from 'vitest';
import {
  Quantity,
  QuantityError,
  QUANTITY_FORMAT_ERROR,
  QUANTITY_SUFFIX_ERROR,
  parseQuantity,
  quantityError,
} from '../../src/lib/pod/quantity.js';

describe('Quantity.parse', () => {
  // [input, canonical String() as resource.Quantity prints it, milliValue]
  const valid: [string, string, number][] = [
    ['100m', '100m', 100],
    ['1', '1', 1000],
    ['0.5', '500m', 500],
    ['.5', '500m', 500],
    ['5.', '5', 5000],
    ['0.1', '100m', 100],
    ['1.1', '1100m', 1100],
    ['+1', '1', 1000],
    ['-1', '-1', -1000],
    ['0', '0', 0],
    ['000', '0', 0],
    ['1000', '1k', 1_000_000],
    ['1024', '1024', 1_024_000],
    ['1e3', '1e3', 1_000_000],
    ['12e-3', '12e-3', 12],
    ['1E', '1E', 1e21],
    ['1G', '1G', 1e12],
    ['1Ki', '1Ki', 1_024_000],
    ['128Mi', '128Mi', 134_217_728_000],
    ['100Mi', '100Mi', 104_857_600_000],
    ['1.5Gi', '1536Mi', 1_610_612_736_000],
    ['0.5Ki', '512', 512_000],
    ['1n', '1n', 1],
    // Finer than a nano-unit rounds up to 1n: asking for something gets something.
    ['0.0000000001', '1n', 1],
  ];
  it.each(valid)('%s -> %s', (input, canonical, milli) => {
    const q = Quantity.parse(input);
    expect(q.toString()).toBe(canonical);
    expect(q.milliValue()).toBe(milli);
  });

  it('accepts numbers, as the API accepts JSON numbers for quantities', () => {
    expect(parseQuantity(2).toString()).toBe('2');
    expect(parseQuantity(0.25).toString()).toBe('250m');
    expect(parseQuantity(1e9).toString()).toBe('1G');
  });

  const invalid: [string, string][] = [
    ['abc', QUANTITY_FORMAT_ERROR],
    ['1.5.5', QUANTITY_FORMAT_ERROR],
    ['', QUANTITY_FORMAT_ERROR],
    ['1 Gi', QUANTITY_FORMAT_ERROR],
    ['1KiB', QUANTITY_FORMAT_ERROR],
    ['1mm', QUANTITY_SUFFIX_ERROR],
    ['1e', QUANTITY_SUFFIX_ERROR],
    ['1k2', QUANTITY_SUFFIX_ERROR],
  ];
  it.each(invalid)('rejects %j', (input, message) => {
    expect(() => Quantity.parse(input)).toThrow(QuantityError);
    expect(quantityError(input)).toBe(message);
  });

  it('says why in apimachinery words', () => {
    expect(QUANTITY_FORMAT_ERROR).toBe("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    expect(quantityError('100m')).toBeUndefined();
  });
});

describe('Quantity arithmetic', () => {
  const cmp: [string, string, number][] = [
    ['1', '1000m', 0],
    ['500m', '1', -1],
    ['1Gi', '1G', 1],
    ['1e3', '1k', 0],
    ['0.1', '100m', 0],
    ['-1', '0', -1],
    ['128Mi', '134217728', 0],
  ];
  it.each(cmp)('cmp(%s, %s) = %d', (a, b, want) => {
    expect(Quantity.parse(a).cmp(Quantity.parse(b))).toBe(want);
  });

  it('is exact where floats are not', () => {
    // 0.1 + 0.2 !== 0.3 in floats; quantities compare exactly.
    expect(Quantity.parse('0.3').cmp(Quantity.parse('300m'))).toBe(0);
    expect(Quantity.parse('100000000000000001').cmp(Quantity.parse('100000000000000000'))).toBe(1);
  });

  it('rounds value() and milliValue() up, like Go', () => {
    expect(Quantity.parse('100m').value()).toBe(1);
    expect(Quantity.parse('1.5').value()).toBe(2);
    expect(Quantity.parse('1Ki').value()).toBe(1024);
    expect(Quantity.parse('1n').milliValue()).toBe(1);
    expect(Quantity.parse('2.5m').milliValue()).toBe(3);
  });

  it('knows zero and sign', () => {
    expect(Quantity.parse('0Mi').isZero).toBe(true);
    expect(Quantity.parse('-5m').sign()).toBe(-1);
    expect(Quantity.parse('5m').sign()).toBe(1);
  });

  it('caps binary quantities at 2^63-1 like Go', () => {
    expect(Quantity.parse('16Ei').scaledValue(0)).toBe((1n << 63n) - 1n);
  });

  it('serializes to its canonical string', () => {
    expect(JSON.stringify({ cpu: Quantity.parse('0.5') })).toBe('{"cpu":"500m"}');
  });
});
