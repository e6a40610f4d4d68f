import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, isCheckpointError, parseJson } from 'savepoint';
import { sha256Hex } from 'savepoint/toolkit';
import { canonicalJsonByWalk } from '../../src/codec/canonical-json.js';

const shuffleKeys = (v: unknown, seed: number): unknown => {
  if (Array.isArray(v)) return v.map((x) => shuffleKeys(x, seed));
  if (v && typeof v === 'object') {
    const entries = Object.entries(v);
    entries.sort((a, b) => ((a[0].length * 31 + seed) % 7) - ((b[0].length * 31 + seed) % 7) || (seed % 2 ? (a[0] < b[0] ? 1 : -1) : 0));
    return Object.fromEntries(entries.map(([k, x]) => [k, shuffleKeys(x, seed)]));
  }
  return v;
};

const json = fc.jsonValue().filter((v) => !JSON.stringify(v).includes('__proto__'));

describe('canonicalJson', () => {
  it('sorts keys and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 1, y: 2 } })).toBe('{"a":[true,null,"x"],"b":1,"c":{"y":2,"z":1}}');
  });

  it('is independent of key order (property)', () => {
    fc.assert(fc.property(json, fc.nat(), (value, seed) => canonicalJson(shuffleKeys(value, seed)) === canonicalJson(value)));
  });

  it('round-trips through parseJson unchanged (property)', () => {
    fc.assert(
      fc.property(json, (value) => {
        const text = canonicalJson(value);
        return canonicalJson(parseJson(text)) === text;
      }),
    );
  });

  it('agrees with JSON.parse on what it means (property)', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('equals an independent reference serializer on any JSON value (property)', () => {
    const reference = (v: unknown): string => {
      if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
      if (v && typeof v === 'object') {
        const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
        entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${reference(x)}`).join(',')}}`;
      }
      return JSON.stringify(v);
    };
    fc.assert(
      fc.property(json, (value) => canonicalJson(value) === reference(value)),
      { numRuns: 500 },
    );
  });

  it('on anything at all, either serializes as JSON does or fails with checkpoint_schema_invalid and a path (property)', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withTypedArray: true,
          withNullPrototype: true,
          withSparseArray: true,
        }),
        (value) => {
          let text: string;
          try {
            text = canonicalJson(value);
          } catch (err) {
            expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
            expect((err as { details: { path?: string } }).details.path).toMatch(/^\$/);
            return;
          }
          expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('the native path (JSON.stringify with a checking replacer) and the JavaScript walk agree on anything, text or error and path (property)', () => {
    // Keys V8 orders numerically ("10" before "9"), keys below the digits ("-", "$"), unsorted keys, nulls, undefined members.
    const key = fc.oneof(
      fc.constantFrom('0', '1', '9', '10', '01', '-1', '4294967295', '$', '-', 'a', 'B', 'é', '', 'toJSON'),
      fc.string({ maxLength: 4 }),
    );
    const tricky = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.anything({ withBigInt: true, withDate: true, withMap: true, withNullPrototype: true, withSparseArray: true, maxDepth: 2 }),
        fc.dictionary(key, tie('value'), { maxKeys: 5 }),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.constantFrom(undefined, NaN, Infinity, -0, null, 1e21, 'x\u2028', '\ud800'),
      ),
    })).value;
    const outcome = (f: (v: unknown) => string, v: unknown): string => {
      try {
        return `text ${f(v)}`;
      } catch (err) {
        return isCheckpointError(err)
          ? `error ${err.reasonCode} ${String((err.details as { path?: string } | undefined)?.path)}`
          : `raw ${String(err)}`;
      }
    };
    fc.assert(
      fc.property(tricky, (v) => outcome(canonicalJson, v) === outcome(canonicalJsonByWalk, v)),
      { numRuns: 3000 },
    );
  });

  it('orders array-index keys as text, not as numbers', () => {
    expect(canonicalJson({ 9: 'a', 10: 'b', '-': 'c', x: { 2: 1, 1: 2 } })).toBe('{"-":"c","10":"b","9":"a","x":{"1":2,"2":1}}');
  });

  it('omits undefined object properties, as JSON.stringify does', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });

  it('serializes Date through toJSON', () => {
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
  });

  const bad: [string, unknown, string][] = [
    ['undefined in an array', { a: [1, undefined] }, '$.a[1]'],
    ['undefined at the top', undefined, '$'],
    ['a function', { f: () => 1 }, '$.f'],
    ['a symbol', { s: Symbol('x') }, '$.s'],
    ['a BigInt', { n: { deep: 10n } }, '$.n.deep'],
    ['NaN', [NaN], '$[0]'],
    ['Infinity', { x: Infinity }, '$.x'],
    ['-Infinity', { 'odd key': -Infinity }, '$["odd key"]'],
    ['a Map', { m: new Map() }, '$.m'],
  ];
  it.each(bad)('rejects %s with checkpoint_schema_invalid and its path', (_name, value, path) => {
    try {
      canonicalJson(value);
      expect.unreachable();
    } catch (err) {
      expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
      expect((err as { details: { path: string } }).details.path).toBe(path);
    }
  });

  it('rejects cycles', () => {
    const a: Record<string, unknown> = {};
    a.self = { back: a };
    expect(() => canonicalJson(a)).toThrow(/cycle at \$\.self\.back/);
  });

  it('accepts a shared (non-cyclic) reference twice', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });

  it('rejects an own __proto__ key', () => {
    const o = JSON.parse('{"__proto__": {"x": 1}}') as object;
    expect(() => canonicalJson(o)).toThrow(/__proto__/);
  });
});

describe('parseJson', () => {
  it('refuses __proto__ keys anywhere and never pollutes Object.prototype', () => {
    expect(() => parseJson('{"a":{"__proto__":{"polluted":true}}}')).toThrow(/__proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a __proto__ key spelled with \\u escapes', () => {
    expect(() => parseJson('{"\\u005f_proto__":{"polluted":true}}')).toThrow(/__proto__/);
    expect(() => parseJson('{"a":[{"__pro\\u0074o__":1}]}')).toThrow(/__proto__/);
    expect(parseJson('{"caf\\u00e9":1}')).toEqual({ café: 1 });
  });

  it('keeps constructor/prototype as plain own data without pollution', () => {
    const v = parseJson('{"constructor":{"prototype":{"polluted":true}}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.hasOwn(v, 'constructor')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('reports invalid JSON as checkpoint_schema_invalid', () => {
    expect(() => parseJson('{"a":', 'latest.json')).toThrow(/checkpoint_schema_invalid: latest.json is not valid JSON/);
  });
});

describe('sha256Hex', () => {
  it('matches the FIPS 180-2 test vector', async () => {
    expect(await sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
