/**
 * Issue 13, defect 6: writing and reading a large checkpoint is linear in its size, and a
 * payload that cannot fit is refused before it is encoded. Ratios of scaled sizes, not
 * wall-clock thresholds (the absolute figures are in `npm run bench -- peers`).
 */
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { readSnapshot, splitDocument } from 'savepoint/toolkit';

const LIMIT = 16 * 1024;

/**
 * `keys` members of ~6 KB each in groups of 20: far over the limit, so the members move to
 * part files, and then the groups (holding only references by then) move too.
 */
function payload(keys: number): JsonValue {
  const out: Record<string, Record<string, JsonValue>> = {};
  for (let k = 0; k < keys; k++) {
    const group = (out[`g${String(Math.floor(k / 20)).padStart(3, '0')}`] ??= {});
    group[`k${String(k).padStart(5, '0')}`] = { n: k, text: `${k}:`.padEnd(6000, 'abcdefghij') };
  }
  return out;
}

async function best(fn: () => Promise<unknown>, runs = 5): Promise<number> {
  let min = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    min = Math.min(min, performance.now() - t);
  }
  return min;
}

describe('large checkpoints', () => {
  it('splitDocument takes linear time: 8x the document costs well under 24x the time (quadratic: 64x)', async () => {
    const small = { state: payload(60) } as { state: JsonValue };
    const large = { state: payload(480) } as { state: JsonValue };
    await splitDocument(small, LIMIT, (n) => `p/${n}`); // warm up
    // Interleaved, best of 5: a load spike on a shared machine hits both sizes alike, and rarely
    // all five runs (measured one after the other, a spike during one size flipped the ratio).
    let t1 = Number.POSITIVE_INFINITY;
    let t8 = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      t1 = Math.min(t1, await best(() => splitDocument(small, LIMIT, (n) => `p/${n}`), 1));
      t8 = Math.min(t8, await best(() => splitDocument(large, LIMIT, (n) => `p/${n}`), 1));
    }
    const { main, parts } = await splitDocument(large, LIMIT, (n) => `p/${n}`);
    expect(new TextEncoder().encode(JSON.stringify(main)).length).toBeLessThanOrEqual(LIMIT);
    expect(parts.length).toBeGreaterThan(480);
    expect(t8 / t1).toBeLessThan(24);
  });

  it('a split checkpoint is written and read back in linear time, and reads back equal', async () => {
    const once = async (state: JsonValue, tag: string): Promise<{ write: number; read: number }> => {
      const storage = memoryStorage();
      const writer = createWriter({ storage, profile: defaultProfile, runId: tag, maxSnapshotBytes: LIMIT, heartbeatIntervalMs: false });
      let t = performance.now();
      const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: state });
      const write = performance.now() - t;
      if (!r.ok) throw r.error;
      await writer.close();
      t = performance.now();
      const back = await readSnapshot(storage, defaultProfile, r.key);
      const read = performance.now() - t;
      expect(back?.payload).toEqual(state);
      return { write, read };
    };
    const small = payload(200); // ~1.2 MB: large enough that fixed costs do not blur the ratio
    const large = payload(800);
    await once(payload(60), 'warm');
    // Interleaved, best of 5: load spikes on a shared machine hit both sizes alike and rarely all five runs.
    const best = { small: { write: Infinity, read: Infinity }, large: { write: Infinity, read: Infinity } };
    for (let i = 0; i < 5; i++) {
      for (const [k, state] of [['small', small], ['large', large]] as const) {
        const m = await once(state, `${k}-${i}`);
        best[k].write = Math.min(best[k].write, m.write);
        best[k].read = Math.min(best[k].read, m.read);
      }
    }
    expect(best.large.write / best.small.write).toBeLessThan(8);
    expect(best.large.read / best.small.read).toBeLessThan(8);
  });

  it('a payload with one string over the limit is refused before the document is encoded or split', async () => {
    const writer = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'huge', maxSnapshotBytes: LIMIT, heartbeatIntervalMs: false });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { s: 'x'.repeat(LIMIT * 4) } });
    await writer.close();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reasonCode).toBe('checkpoint_too_large');
    await expect(splitDocument({ a: 'y'.repeat(LIMIT + 1) }, LIMIT, (n) => `p/${n}`)).rejects.toMatchObject({ reasonCode: 'checkpoint_too_large' });
  });

  it("with onOversize 'reject', an oversized payload is refused from its text alone", async () => {
    const writer = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'rej', maxSnapshotBytes: LIMIT, onOversize: 'reject', heartbeatIntervalMs: false });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: payload(10) });
    await writer.close();
    expect(!r.ok && r.reasonCode).toBe('checkpoint_too_large');
    expect(!r.ok && r.error.details).toMatchObject({ limit: LIMIT });
  });
});
