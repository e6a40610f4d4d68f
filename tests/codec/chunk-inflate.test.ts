/**
 * Inflating a chunk's stored form (src/codec/chunk-packing.ts `inflateChunk`): a short deflate
 * stream (every leaf savepoint writes) is inflated in one call into a bounded buffer, a longer one
 * in steps that stop at the bound; either way the answer is fflate's own inflation of the stream,
 * or a failure when that fails or passes the largest chunk.
 */
import fc from 'fast-check';
import { deflateSync, inflateSync } from 'fflate';
import { describe, expect, it, vi } from 'vitest';
import { crc32 } from '../../src/codec/gzip.js';
import { EDGE_DICTIONARY } from '../../src/codec/edge-dictionary.js';

const streams = vi.hoisted(() => ({ made: 0 }));
vi.mock('fflate', async (original) => {
  const real = await original<typeof import('fflate')>();
  class CountedInflate extends real.Inflate {
    constructor(...args: ConstructorParameters<typeof real.Inflate>) {
      super(...args);
      streams.made++;
    }
  }
  return { ...real, Inflate: CountedInflate };
});

const { CHUNK_CONTENT_MAX_BYTES, inflateChunk, packChunk } = await import('../../src/codec/chunk-packing.js');

/** A deflate stream in a chunk's stored form: the mark, the stream, its CRC-32. */
function storedForm(deflated: Uint8Array): Uint8Array {
  const out = new Uint8Array(2 + deflated.length + 4);
  out.set([0xff, 0x01]);
  out.set(deflated, 2);
  new DataView(out.buffer).setUint32(out.length - 4, crc32(deflated), true);
  return out;
}

/** What inflating `deflated` must give: fflate's unbounded inflation, or a failure. */
function expected(deflated: Uint8Array, dictionary?: Uint8Array): Uint8Array | 'fails' {
  try {
    const content = inflateSync(deflated, dictionary ? { dictionary } : undefined);
    return content.length > CHUNK_CONTENT_MAX_BYTES ? 'fails' : content;
  } catch {
    return 'fails';
  }
}

const text = fc
  .array(fc.string({ unit: fc.constantFrom(...'abcdefgh {}[]":,0123456789'.split('')), minLength: 1, maxLength: 600 }), { maxLength: 40 })
  .map((parts) => new TextEncoder().encode(parts.join('')));
const content = fc.oneof(
  text,
  fc.uint8Array({ maxLength: 6000 }),
  fc.integer({ min: 0, max: 40_000 }).map((n) => new Uint8Array(n).fill(120)),
);

describe('inflating a chunk’s stored form', () => {
  it('any deflate stream, intact or with bytes changed (its CRC made to match): the content fflate inflates it to, or a failure past the bound (property)', () => {
    fc.assert(
      fc.property(
        content,
        fc.boolean(),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 3 }),
        (bytes, withDictionary, flips) => {
          const dictionary = withDictionary ? EDGE_DICTIONARY : undefined;
          const deflated = deflateSync(bytes, dictionary ? { level: 6, dictionary } : { level: 6 });
          for (const [at, xor] of flips) deflated[at % deflated.length]! ^= xor;
          const want = expected(deflated, dictionary);
          const got = inflateChunk(storedForm(deflated), dictionary);
          if (want === 'fails') expect('failed' in got).toBe(true);
          else expect(got).toEqual({ content: want });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a leaf’s stored form is inflated in one call, without a stream (whose every step allocated a 128 KiB buffer)', () => {
    const leaf = new TextEncoder().encode(`"${'lorem ipsum dolor sit amet, '.repeat(60)}"`);
    const stored = packChunk(leaf);
    expect(stored.length).toBeLessThan(leaf.length);
    streams.made = 0;
    expect(inflateChunk(stored)).toEqual({ content: leaf });
    expect(streams.made).toBe(0);
  });

  it('a content handed out is its own copy: the next inflation does not change it', () => {
    const a = new TextEncoder().encode('a'.repeat(3000));
    const b = new TextEncoder().encode('b'.repeat(3000));
    const first = inflateChunk(packChunk(a));
    inflateChunk(packChunk(b));
    expect(first).toEqual({ content: a });
  });
});
