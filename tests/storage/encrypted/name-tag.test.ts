import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NameTags } from '../../../src/storage/encrypted/name-tag.js';
import { sipHash24 } from '../../../src/storage/encrypted/siphash.js';

const nameKey = Uint8Array.from({ length: 16 }, (_, i) => i * 17 + 3);
const fresh = (key: string): Uint8Array => sipHash24(nameKey, new TextEncoder().encode(key));

describe('NameTags', () => {
  it('property: every tag is the SipHash-2-4 of the key name, whatever the order and repeats of earlier calls', () => {
    const names = fc.oneof(fc.constantFrom('checkpoints/r/latest.json', 'k/a', 'k/b'), fc.string({ maxLength: 90, unit: 'grapheme' }));
    fc.assert(
      fc.property(fc.array(names, { maxLength: 40 }), (keys) => {
        const tags = new NameTags(nameKey);
        for (const key of keys) expect(tags.of(key)).toEqual(fresh(key));
      }),
      { numRuns: 200 },
    );
  });

  it("keeps a run's latest key cached while a new history key is tagged before it on every checkpoint", () => {
    // A checkpoint tags its new history key, then `latest`: `latest` must survive each new key
    // in the cache (it was evicted by every new key, costing a second SipHash per checkpoint).
    const tags = new NameTags(nameKey);
    tags.of('checkpoints/r/history/cp_0.json');
    const latest = tags.of('checkpoints/r/latest.json');
    for (let i = 1; i < 5; i++) {
      tags.of(`checkpoints/r/history/cp_${i}.json`);
      expect(tags.of('checkpoints/r/latest.json')).toBe(latest);
    }
  });
});
