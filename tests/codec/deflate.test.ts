/**
 * The raw deflate of chunks and edges (src/codec/deflate.ts): Node's zlib where the runtime has
 * it, fflate elsewhere. Their streams differ byte for byte; either inflates back to the content
 * with the one inflater every reader uses, so what either wrote reads, and a chunk's id (the
 * hash of its content) is the same whichever deflated it.
 */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { inflateSync } from 'fflate';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { inflateChunk, looksDeflated, packChunk } from '../../src/codec/chunk-packing.js';
import { deflateRaw, fflateDeflateRaw, zlibDeflateRaw, type RawDeflate } from '../../src/codec/deflate.js';
import { EDGE_DICTIONARY } from '../../src/codec/edge-dictionary.js';

const nodeZlib = createRequire(import.meta.url)('node:zlib') as { deflateRawSync: (...args: unknown[]) => Uint8Array };

const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/** Text like a checkpoint's (compressible) or arbitrary bytes (not), up to a leaf's largest content and past it. */
const contentArb = fc.oneof(
  fc
    .string({ unit: fc.constantFrom(...'abcdefgh {}[]":,0123456789é漢'.split('')), maxLength: 4000 })
    .map((s) => new TextEncoder().encode(s)),
  fc.uint8Array({ maxLength: 17_000 }),
);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('raw deflate', () => {
  it('Node’s zlib is there (Node has it), and deflateRaw gives its stream, not fflate’s', () => {
    expect(zlibDeflateRaw()).toBeDefined();
    const content = new TextEncoder().encode('the agent called a tool and read its answer; '.repeat(40));
    expect(Buffer.from(deflateRaw(content, 6)).equals(Buffer.from(zlibDeflateRaw()!(content, 6)))).toBe(true);
  });

  it('a leaf and an edges member are deflated by Node’s zlib: no deflate tables made in JavaScript per call', () => {
    const spy = vi.spyOn(nodeZlib, 'deflateRawSync');
    const leaf = new TextEncoder().encode(JSON.stringify('the agent called a tool and read its answer; '.repeat(40)));
    expect(looksDeflated(packChunk(leaf))).toBe(true);
    expect(looksDeflated(packChunk(leaf.subarray(0, 400), EDGE_DICTIONARY))).toBe(true);
    expect(spy).toHaveBeenCalledTimes(2);
  });

  const deflaters: [string, RawDeflate][] = [
    ['fflate', fflateDeflateRaw],
    ['zlib', zlibDeflateRaw()!],
  ];
  for (const [name, deflate] of deflaters) {
    it(`${name}: any content inflates back, with the edges' dictionary and without, through the readers' inflater (property)`, () => {
      fc.assert(
        fc.property(contentArb, fc.boolean(), (content, withDictionary) => {
          const dictionary = withDictionary ? EDGE_DICTIONARY : undefined;
          const deflated = deflate(content, 6, dictionary);
          expect(same(inflateSync(deflated, dictionary ? { dictionary } : {}), content)).toBe(true);
        }),
        { numRuns: 150 },
      );
    });
  }

  it('a chunk packed by either deflater unpacks to its content (a store may hold both forms of one chunk) (property)', () => {
    fc.assert(
      fc.property(
        contentArb.filter((c) => c.length <= 16 * 1024),
        fc.boolean(),
        (content, withDictionary) => {
          const dictionary = withDictionary ? EDGE_DICTIONARY : undefined;
          const byZlib = packChunk(content, dictionary);
          const spy = vi
            .spyOn(nodeZlib, 'deflateRawSync')
            .mockImplementation((bytes) => fflateDeflateRaw(bytes as Uint8Array, 6, dictionary));
          const byFflate = packChunk(content, dictionary);
          spy.mockRestore();
          for (const stored of [byZlib, byFflate]) {
            if (stored === content) continue;
            const inflated = inflateChunk(stored, dictionary);
            expect('content' in inflated && same(inflated.content, content)).toBe(true);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
