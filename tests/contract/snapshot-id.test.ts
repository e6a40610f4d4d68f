import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newSnapshotId } from 'savepoint/toolkit';

const SNAPSHOT_ID_PATTERN = /^cp_(\d{8}T\d{9}Z)_([0-9a-z]{4,32})$/; // snapshot-lifecycle.md

/** 9999-12-31T23:59:59.999Z: the compact timestamp has four year digits. */
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

describe('newSnapshotId', () => {
  it('is cp_<compact UTC>_<10 of [0-9a-z]> and sorts by creation time (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: LAST_MS }), fc.integer({ min: 0, max: LAST_MS }), (a, b) => {
        const [x, y] = [newSnapshotId(a), newSnapshotId(b)];
        expect(x).toMatch(SNAPSHOT_ID_PATTERN);
        expect(x.split('_')[2]).toMatch(/^[0-9a-z]{10}$/);
        if (a < b) expect(x.slice(0, 22) <= y.slice(0, 22)).toBe(true);
      }),
    );
  });

  it('draws every suffix character about equally often', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 3600; i++) for (const c of newSnapshotId(0).slice(-10)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(36);
    // 36,000 draws: 1,000 expected per character; a bias like b % 36 over 256 values would give ~1,100 vs ~950.
    for (const n of counts.values()) expect(Math.abs(n - 1000)).toBeLessThan(200);
  });
});
