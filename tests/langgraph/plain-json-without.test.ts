/**
 * plainJsonWithout (src/langgraph/plain-json.ts) writes a checkpoint's JSON without its
 * `channel_values` and without copying it first: it must give what plainJson gives for the copy
 * (`{ channel_values, ...rest }`), and leave to the serializer what plainJson leaves to it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainJson, plainJsonWithout } from '../../src/langgraph/plain-json.js';

function withoutKey(record: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _dropped, ...rest } = record;
  return rest;
}

class Box {
  constructor(readonly n: number) {}
}

describe('plainJsonWithout', () => {
  it('property: for any record (plain or not, with or without the member), the text plainJson gives for the record without that member', () => {
    const leaf = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constant(undefined),
      fc.constant(new Box(1)),
      fc.constant(new Map([[1, 2]])),
      fc.constant({ toJSON: () => 1 }),
      fc.constant({ lg_name: 'Send', node: 'a', args: 1 }),
      fc.string({ minLength: 60, maxLength: 80 }),
    );
    const record = fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('channel_values', '10', '2', 'v', 'id')), leaf, {
      maxKeys: 6,
    });
    const proto = fc.constantFrom('object', 'null', 'class');
    fc.assert(
      fc.property(record, proto, (r, p) => {
        const subject: Record<string, unknown> =
          p === 'object' ? { ...r } : p === 'null' ? Object.assign(Object.create(null) as object, r) : Object.assign(new Box(2), r);
        const expected = p === 'class' ? undefined : plainJson(withoutKey(subject, 'channel_values'));
        expect(plainJsonWithout(subject, 'channel_values')).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('a record that refers to itself, or whose member does, is left to the serializer', () => {
    const r: Record<string, unknown> = { v: 4, channel_values: {} };
    r.self = r;
    expect(plainJsonWithout(r, 'channel_values')).toBeUndefined();
    const inner: Record<string, unknown> = {};
    inner.loop = inner;
    expect(plainJsonWithout({ v: 4, inner }, 'channel_values')).toBeUndefined();
  });
});
