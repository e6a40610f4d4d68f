import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildInventory, gunzip, gzip } from 'savepoint/toolkit';
import { createWriter, defaultProfile, isCheckpointError, memoryStorage, planResume, type StorageAdapter } from 'savepoint';
import { manualClock } from 'savepoint/testing';

// A small planted .json.gz once made planResume take 41 s and 4.6 GB. Gunzip
// is now bounded by the profile's maxSnapshotBytes and stops as soon as it passes it.

/**
 * A gzip "bomb": one fixed-Huffman deflate block of a zero literal and `repeats` copies of
 * <length 258, distance 1>, 13 bits per 258 output bytes (~1600:1). The trailer lies (size
 * 0, CRC 0), as a hostile file's would, so only a streaming bound stops it early.
 */
function gzipBomb(repeats: number): Uint8Array {
  const out: number[] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
  let acc = 0;
  let n = 0;
  const bit = (b: number): void => {
    acc |= b << n;
    if (++n === 8) {
      out.push(acc);
      acc = 0;
      n = 0;
    }
  };
  const bits = (value: number, count: number): void => {
    for (let i = 0; i < count; i++) bit((value >> i) & 1); // header fields: least significant bit first
  };
  const code = (value: number, count: number): void => {
    for (let i = count - 1; i >= 0; i--) bit((value >> i) & 1); // Huffman codes: most significant bit first
  };
  bits(1, 1); // BFINAL
  bits(1, 2); // BTYPE 01: fixed Huffman codes
  code(0x30, 8); // literal 0
  for (let r = 0; r < repeats; r++) {
    code(0xc5, 8); // length code 285: 258 bytes
    code(0, 5); // distance code 0: distance 1
  }
  code(0, 7); // end of block
  if (n > 0) out.push(acc);
  out.push(0, 0, 0, 0, 0, 0, 0, 0); // CRC-32 and ISIZE, both wrong
  return Uint8Array.from(out);
}

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return isCheckpointError(err) ? err.reasonCode : `raw ${String(err)}`;
  }
  return undefined;
};

describe('gunzip is bounded', () => {
  it('stops a bomb as soon as the output passes maxBytes, with checkpoint_too_large', () => {
    const bomb = gzipBomb(600_000); // ~1 MB that inflates to ~155 MB
    expect(bomb.length).toBeLessThan(1_000_000);
    expect(code(() => gunzip(bomb, 'bomb.json.gz', { maxBytes: 1024 * 1024 }))).toBe('checkpoint_too_large');
    // The default bound (10 MiB) applies without options.
    expect(code(() => gunzip(bomb, 'bomb.json.gz'))).toBe('checkpoint_too_large');
  });

  it('stops an honest file over the bound too, whatever its trailer says', () => {
    const big = gzip(new Uint8Array(2 * 1024 * 1024));
    let error: unknown;
    try {
      gunzip(big, 'big.json.gz', { maxBytes: 1024 * 1024 });
    } catch (err) {
      error = err;
    }
    expect(isCheckpointError(error, 'checkpoint_too_large') && error.details).toEqual({ limit: 1024 * 1024 });
  });

  it('property: gunzip(gzip(d), maxBytes) gives d when it fits, checkpoint_too_large when not', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 20_000 }), fc.integer({ min: 0, max: 25_000 }), fc.boolean(), (data, maxBytes, repetitive) => {
        // Repetitive data inflates in many output chunks; random data in few.
        const d = repetitive ? data.map((_, i) => i % 7) : data;
        const z = gzip(d);
        if (d.length <= maxBytes) expect(gunzip(z, 'x', { maxBytes })).toEqual(d);
        else expect(code(() => gunzip(z, 'x', { maxBytes }))).toBe('checkpoint_too_large');
      }),
      { numRuns: 200 },
    );
  });

  it('round-trips data much larger than one inflate step, byte for byte', () => {
    const d = new Uint8Array(3 * 1024 * 1024);
    for (let i = 0; i < d.length; i++) d[i] = (i * 2654435761) >>> 27;
    expect(Buffer.from(gunzip(gzip(d), 'x', { maxBytes: d.length })).equals(Buffer.from(d))).toBe(true);
  });

  it('validates its own arguments with reason codes', () => {
    expect(code(() => gunzip('abc' as unknown as Uint8Array))).toBe('checkpoint_config_invalid');
    expect(code(() => gunzip(gzip(new Uint8Array(3)), 'x', { maxBytes: -1 }))).toBe('checkpoint_config_invalid');
    expect(code(() => gunzip(gzip(new Uint8Array(3)), 'x', { maxBytes: Number.NaN }))).toBe('checkpoint_config_invalid');
  });
});

describe('readers skip a planted bomb instead of stalling', () => {
  const profile = { ...defaultProfile, maxSnapshotBytes: 1024 * 1024 };

  async function runWithBomb(): Promise<{ storage: StorageAdapter; bombKey: string }> {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile, runId: 'run-a', clock: manualClock(Date.UTC(2025, 5, 1)) });
    for (let i = 1; i <= 3; i++)
      expect((await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: i } })).ok).toBe(true);
    await writer.close();
    const bombKey = 'checkpoints/run-a/history/cp_20990101T000000000Z_bomb000000.json.gz';
    expect(profile.layout.classify(bombKey)?.kind).toBe('history');
    await storage.put(bombKey, gzipBomb(600_000));
    return { storage, bombKey };
  }

  it('planResume scans past it and reports it as checkpoint_too_large', async () => {
    const { storage, bombKey } = await runWithBomb();
    await storage.delete('checkpoints/run-a/latest.json');
    const plan = await planResume({ storage, profile, runId: 'run-a', newerCheck: 'scan' });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan.skipped).toContainEqual(expect.objectContaining({ key: bombKey, reasonCode: 'checkpoint_too_large' }));
  });

  it('buildInventory reports it as checkpoint_too_large', async () => {
    const { storage, bombKey } = await runWithBomb();
    const inventory = await buildInventory({ storage, profile });
    expect(inventory.problems).toContainEqual(expect.objectContaining({ key: bombKey, reasonCode: 'checkpoint_too_large' }));
  });
});
