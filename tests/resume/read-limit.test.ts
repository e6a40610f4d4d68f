/**
 * Readers refuse a stored file over the profile's limit from its size, before reading it
 * (DESIGN invariant 9): planResume reports it skipped (`checkpoint_too_large`) and resumes from
 * the newest sound file, readSnapshot refuses it, and an adapter that ignores `get`'s `maxBytes`
 * is held to the same limit by the read path.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, isCheckpointError, memoryStorage, planResume, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { documentReadLimit } from '../../src/snapshot-io/bounded-read.js';
import { buildInventory } from '../../src/retention/inventory.js';

const profile = { ...defaultProfile, maxSnapshotBytes: 4096 };

/** A store that drops `get`'s options, as an adapter written before them does. */
const ignoringLimits = (inner: StorageAdapter): StorageAdapter => ({
  name: 'ignoring',
  capabilities: inner.capabilities,
  get: (key) => inner.get(key),
  put: (key, bytes, options) => inner.put(key, bytes, options),
  delete: (key, options) => inner.delete(key, options),
  list: (prefix) => inner.list(prefix),
  batch: (ops) => inner.batch!(ops),
  close: () => inner.close(),
});

async function runWithHugeLatest(storage: StorageAdapter): Promise<string> {
  const writer = createWriter({ storage, profile, runId: 'r', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (let i = 1; i <= 2; i++)
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).ok).toBe(true);
  await writer.close();
  const latestKey = profile.layout.latestKey('r');
  await storage.put(latestKey, new Uint8Array(documentReadLimit(profile) + 1).fill(0x20));
  return latestKey;
}

describe('a stored file over the profile’s limit', () => {
  for (const [label, wrap] of [
    ['memoryStorage (refuses from the size)', (s: StorageAdapter) => s],
    ['an adapter that ignores maxBytes (the read path refuses)', ignoringLimits],
  ] as const) {
    it(`${label}: planResume skips it as checkpoint_too_large and resumes from history; readSnapshot refuses it`, async () => {
      const storage = wrap(memoryStorage());
      const latestKey = await runWithHugeLatest(storage);
      const plan = await planResume({ storage, profile, runId: 'r' });
      expect(plan.snapshot.sequence).toBe(2);
      expect(plan.skipped).toEqual([expect.objectContaining({ key: latestKey, kind: 'latest', reasonCode: 'checkpoint_too_large' })]);
      const err = await readSnapshot(storage, profile, latestKey).catch((e: unknown) => e);
      expect(isCheckpointError(err, 'checkpoint_too_large')).toBe(true);
      expect((err as { details: unknown }).details).toMatchObject({ key: latestKey, limit: documentReadLimit(profile) });
    });
  }

  it('a file at the limit is still read (the limit leaves room for gzip framing of a document at maxSnapshotBytes)', () => {
    expect(documentReadLimit(profile)).toBeGreaterThan(profile.maxSnapshotBytes);
    expect(documentReadLimit(defaultProfile)).toBeLessThan(defaultProfile.maxSnapshotBytes * 1.01);
  });
});

describe('retention’s inventory and a history file over the profile’s limit', () => {
  it('records it unreadable (checkpoint_too_large) without reading it, and keeps the sound snapshots', async () => {
    const inner = memoryStorage();
    await runWithHugeLatest(inner);
    const hugeKey = profile.layout.historyKey!({
      runId: 'r',
      sequence: 9,
      id: 'cp_20991231T000000000Z_huge000000',
      source: 'step_boundary',
    });
    await inner.put(hugeKey, new Uint8Array(documentReadLimit(profile) + 1));
    // What the inventory asked to read whole: the huge file must be refused from its size by the store.
    const asked: { key: string; maxBytes: number | undefined }[] = [];
    const storage: StorageAdapter = {
      ...ignoringLimits(inner),
      get: (key, options) => (asked.push({ key, maxBytes: options?.maxBytes }), inner.get(key, options)),
    };
    const inv = await buildInventory({ storage, profile });
    const run = inv.runs.find((r) => r.runId === 'r')!;
    expect(run.unreadable).toEqual(expect.arrayContaining([expect.objectContaining({ key: hugeKey, reasonCode: 'checkpoint_too_large' })]));
    expect(asked.find((a) => a.key === hugeKey)?.maxBytes).toBe(documentReadLimit(profile));
    expect(run.snapshots.map((s) => s.sequence)).toEqual(expect.arrayContaining([1, 2]));
  });
});
