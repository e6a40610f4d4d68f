/**
 * Where a document's long strings start and end (the edges' first choice, and what decides whether
 * a small document is chunked or packed whole): found in one pass over the bytes.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HEAD_MAX, headAtText, TAIL_MAX, tailAtText, TEXT_RUN } from '../../src/codec/chunk-edges.js';

const QUOTE = 0x22;

/** The definition, quote by quote: right after the first quote below HEAD_MAX followed by TEXT_RUN quote-free bytes. */
function headByQuotes(bytes: Uint8Array): number {
  let quote = bytes.indexOf(QUOTE);
  while (quote >= 0 && quote < HEAD_MAX) {
    const next = bytes.indexOf(QUOTE, quote + 1);
    if ((next < 0 ? bytes.length : next) - quote - 1 >= TEXT_RUN) return quote + 1;
    quote = next;
  }
  return 0;
}

/** The definition, quote by quote from the end: bytes after the last quote within TAIL_MAX of the end preceded by TEXT_RUN quote-free bytes. */
function tailByQuotes(bytes: Uint8Array): number {
  const n = bytes.length;
  let quote = bytes.lastIndexOf(QUOTE);
  while (quote >= 0 && quote >= n - TAIL_MAX) {
    const before = quote > 0 ? bytes.lastIndexOf(QUOTE, quote - 1) : -1;
    if (quote - before - 1 >= TEXT_RUN) return n - quote - 1;
    quote = before;
  }
  return -1;
}

/** Bytes made of runs of quote-free bytes (lengths around TEXT_RUN, and long ones around HEAD_MAX) between quotes. */
const documentBytes = fc
  .array(
    fc.tuple(
      fc.oneof(fc.integer({ min: 0, max: 12 }), fc.integer({ min: TEXT_RUN - 2, max: TEXT_RUN + 2 }), fc.integer({ min: 0, max: 2300 })),
      fc.boolean(),
    ),
    { maxLength: 40 },
  )
  .map((runs) => {
    const out: number[] = [];
    for (const [length, quote] of runs) {
      for (let i = 0; i < length; i++) out.push(0x61 + (i % 26));
      if (quote) out.push(QUOTE);
    }
    return Uint8Array.from(out);
  });

describe('long strings in a document (chunk edges)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('property: where the first long string starts and the last ends, as the quote-by-quote definition finds them', () => {
    fc.assert(
      fc.property(documentBytes, (bytes) => {
        expect(headAtText(bytes)).toBe(headByQuotes(bytes));
        expect(tailAtText(bytes)).toBe(tailByQuotes(bytes));
      }),
      { numRuns: 2000 },
    );
    const exact = Uint8Array.from([QUOTE, ...new Array<number>(TEXT_RUN).fill(0x61)]);
    expect([headAtText(exact), tailAtText(exact)]).toEqual([1, -1]);
    expect([headAtText(exact.subarray(0, TEXT_RUN)), headAtText(new Uint8Array(0)), tailAtText(new Uint8Array(0))]).toEqual([0, 0, -1]);
  });

  it('one pass over the bytes: no search call per quote', () => {
    const text = `{"a":"b","c":[1,2],"d":"${'x'.repeat(300)}","e":"f"}`;
    const bytes = new TextEncoder().encode(text);
    const indexOf = vi.spyOn(Uint8Array.prototype, 'indexOf');
    const lastIndexOf = vi.spyOn(Uint8Array.prototype, 'lastIndexOf');
    expect(headAtText(bytes)).toBe(text.indexOf('x'));
    expect(tailAtText(bytes)).toBe(text.length - text.lastIndexOf('x') - 2);
    expect(indexOf).not.toHaveBeenCalled();
    expect(lastIndexOf).not.toHaveBeenCalled();
  });
});
