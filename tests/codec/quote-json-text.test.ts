/**
 * Quoting a JSON text made by `JSON.stringify` as a JSON string (src/codec/quote-json-text.ts):
 * exactly `JSON.stringify` of it, between the given ends, whatever the value (every character,
 * escapes, lone surrogates, quotes sparse or dense, short or long).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { quoteJsonText } from '../../src/codec/quote-json-text.js';

/** Long strings of any code units (lone surrogates, controls, quotes, backslashes), or mostly letters with a few of those. */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 6000 }),
  fc.string({ unit: 'grapheme', maxLength: 3000 }),
  fc
    .tuple(
      fc.integer({ min: 1, max: 9000 }),
      fc.array(fc.tuple(fc.nat(), fc.constantFrom('"', '\\', '\n', '\u0000', '\ud800', 'é', '\u2028')), { maxLength: 40 }),
    )
    .map(([length, inserts]) => {
      let s = 'abcdefghijklmnopqrstuvwxyz'.repeat(Math.ceil(length / 26)).slice(0, length);
      for (const [at, c] of inserts) s = s.slice(0, at % (s.length + 1)) + c + s.slice(at % (s.length + 1));
      return s;
    }),
);
const value = fc.oneof(
  text,
  fc.array(text, { maxLength: 8 }),
  fc.dictionary(text, fc.oneof(text, fc.integer(), fc.constant(null)), { maxKeys: 5 }),
  fc.jsonValue({ maxDepth: 3 }),
);

describe('quoting a JSON text', () => {
  it('is JSON.stringify of the text, between the given ends, for the JSON of any value (property)', () => {
    fc.assert(
      fc.property(value, fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), (v, before, after) => {
        const json = JSON.stringify(v);
        expect(quoteJsonText(json, before, after)).toBe(before + JSON.stringify(json) + after);
        expect(quoteJsonText(json)).toBe(JSON.stringify(json));
      }),
      { numRuns: 300 },
    );
  });

  it('long texts with sparse and with dense quotes', () => {
    const sparse = JSON.stringify(Array.from({ length: 300 }, (_, i) => `message ${i} ${'lorem ipsum '.repeat(150)}`));
    const dense = JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ id: `m${i}`, text: 'a "b" \\ c', n: i })));
    for (const json of [sparse, dense]) expect(quoteJsonText(json, '{"text":', '}')).toBe(`{"text":${JSON.stringify(json)}}`);
  });
});
