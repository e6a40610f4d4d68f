/**
 * Leaf boundaries of content chunks (src/codec/chunking.ts): besides the gear hash's, a leaf ends
 * right after a quote opening or closing a long string, so a changed item of a list, or an
 * appended message, is cut off its neighbours and a new version stores little more than what
 * changed, and a message is the same leaves wherever it is held.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leafBoundaries, nodeGroups } from '../../src/codec/chunking.js';
import { TEXT_RUN } from '../../src/codec/chunk-edges.js';
import { letters } from '../support/letters.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const QUOTE = 0x22;

/** The leaves of `bytes`, as latin1 strings (one character a byte). */
function leavesOf(bytes: Uint8Array): string[] {
  const out: string[] = [];
  let start = 0;
  for (const end of leafBoundaries(bytes)) {
    out.push(Buffer.from(bytes.subarray(start, end)).toString('latin1'));
    start = end;
  }
  return out;
}

/** JSON-like text: short and long strings, separators; long strings have no quote inside. */
const jsonishArb = fc
  .array(
    fc.oneof(
      fc.tuple(fc.integer(), fc.integer({ min: 1, max: 3_000 })).map(([seed, n]) => `"${letters(seed, n)}"`),
      fc.constantFrom(',', ':', '{', '}', '[', ']', '1', 'null', ' '),
    ),
    { minLength: 1, maxLength: 60 },
  )
  .map((parts) => encode(parts.join('')));

describe('chunk leaf boundaries', () => {
  it('leaves reassemble the document; no leaf holds a quote closing TEXT_RUN quote-free bytes of its own but as its last byte (property)', () => {
    fc.assert(
      fc.property(jsonishArb, (bytes) => {
        const leaves = leavesOf(bytes);
        expect(leaves.join('')).toBe(Buffer.from(bytes).toString('latin1'));
        for (const leaf of leaves) {
          let run = 0;
          for (let i = 0; i < leaf.length - 1; i++) {
            if (leaf.charCodeAt(i) === QUOTE) {
              expect(i - run).toBeLessThan(TEXT_RUN);
              run = i + 1;
            }
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a leaf ends right after every quote that opens TEXT_RUN quote-free bytes: a long string starts on a boundary (property)', () => {
    fc.assert(
      fc.property(jsonishArb, (bytes) => {
        const ends = new Set(leafBoundaries(bytes));
        for (let q = 0; q + 1 + TEXT_RUN <= bytes.length; q++) {
          if (bytes[q] !== QUOTE) continue;
          if (!bytes.subarray(q + 1, q + 1 + TEXT_RUN).includes(QUOTE)) expect(ends.has(q + 1)).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a message is the same leaves alone in a list (a task's writes) and among others (a checkpoint), as JSON inside JSON", () => {
    const message = letters(5, 2_048);
    /** The leaves from where `message` starts in `doc` to its closing `\"`: undefined unless both are boundaries. */
    const leavesOfMessage = (doc: string): string[] | undefined => {
      const bytes = encode(doc);
      const start = doc.indexOf(message);
      const end = start + message.length + 2;
      const ends = leafBoundaries(bytes);
      if (!ends.includes(start) || !ends.includes(end)) return undefined;
      const inside = ends.filter((e) => e > start && e <= end);
      return inside.map((e, i) => doc.slice(i === 0 ? start : inside[i - 1], e));
    };
    const alone = JSON.stringify({ writes: [{ channel: 'messages', text: JSON.stringify([message]) }] });
    const among = JSON.stringify({ messages: { text: JSON.stringify([letters(4, 2_048), message, letters(6, 2_048)]) } });
    const mine = leavesOfMessage(alone);
    expect(mine).toBeDefined();
    expect(leavesOfMessage(among)).toEqual(mine);
  });

  it("a boundary depends on the bytes from its leaf's start alone: the leaves after any boundary are those of the rest cut on its own (property)", () => {
    fc.assert(
      fc.property(jsonishArb, fc.nat(), (bytes, pick) => {
        const ends = leafBoundaries(bytes);
        const at = pick % ends.length === 0 ? 0 : ends[(pick % ends.length) - 1]!;
        const rest = leafBoundaries(bytes.subarray(at)).map((end) => end + at);
        expect(rest).toEqual(ends.filter((end) => end > at));
      }),
      { numRuns: 200 },
    );
  });

  it('a list of 1 KB items with two changing each version stores about the changed items as new leaves, not a leaf more on each side', () => {
    const items = Array.from({ length: 200 }, (_, k) => letters(k + 1, 1000));
    let previous = new Set(leavesOf(encode(JSON.stringify(items))));
    let written = 0;
    const versions = 100;
    for (let v = 0; v < versions; v++) {
      for (const k of [(2 * v) % 200, (2 * v + 1) % 200]) items[k] = letters(100_000 + v * 1000 + k, 1000);
      const leaves = leavesOf(encode(JSON.stringify(items)));
      for (const leaf of leaves) if (!previous.has(leaf)) written += leaf.length;
      previous = new Set(leaves);
    }
    // 2,000 bytes change a version; cut by the gear hash alone, the new leaves held about 3,300.
    expect(written / versions).toBeLessThan(2_400);
  });
  it('ids are cut into nodes after an id whose last byte is a multiple of the fanout (8 unless asked), at most 64 a node (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 300 }),
        fc.constantFrom(undefined, 2, 4, 8, 16),
        (raw, asked) => {
          const ids = raw.map((b) => Buffer.from(b).toString('hex'));
          const fanout = asked ?? 8;
          const groups = nodeGroups(ids, asked);
          expect(groups.flat()).toEqual(ids);
          for (const [g, group] of groups.entries()) {
            expect(group.length).toBeLessThanOrEqual(64);
            const ends = group.map((id) => parseInt(id.slice(-2), 16) % fanout === 0);
            expect(ends.slice(0, -1)).not.toContain(true);
            if (g < groups.length - 1) expect(ends.at(-1) || group.length === 64).toBe(true);
          }
        },
      ),
    );
  });
});
