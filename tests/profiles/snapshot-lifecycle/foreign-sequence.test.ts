/**
 * snapshot-lifecycle.md has no sequence: a snapshot another tool wrote carries only its
 * `created_at` and `snapshot_id`. Resume and the writer number such snapshots by the run's
 * order of time — densely, after savepoint's own numbers — never by their time in ms, so the
 * numbers neither jump nor collide, and savepoint's own newer snapshot stays the newest.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, planResume, type StorageAdapter } from 'savepoint';
import { importSnapshotLifecycleRun, snapshotLifecycle, type SnapshotLifecyclePayload } from 'savepoint/snapshot-lifecycle';
import { manualClock } from 'savepoint/testing';
import { fsStorage } from 'savepoint/fs';
import { foreignFixture, tempDirs } from '../../support/foreign.js';
import { utf8Encode } from '../../../src/codec/utf8.js';

const RUN = 'sess-2026-01-15-a';
const latestKey = snapshotLifecycle.layout.latestKey(RUN);
const historyKey = (id: string): string => `checkpoints/${RUN}/history/${id}.json`;

/** A spec-shaped document another tool wrote: no `sequence`, no seal, its own id and time. */
function foreignDoc(id: string, createdAt: string, stepId: string): Record<string, unknown> {
  const { integrity: _spec, ...doc } = JSON.parse(foreignFixture('snapshot-lifecycle', 'latest.spec.json'));
  return { ...doc, snapshot_id: id, created_at: createdAt, step_state: { ...doc.step_state, step_id: stepId } };
}

/** Writes `doc` as the other tool does: its history file, then `latest.json` when `asLatest`. */
async function putForeign(storage: StorageAdapter, doc: Record<string, unknown>, asLatest = true): Promise<void> {
  const bytes = utf8Encode(JSON.stringify(doc, null, 2));
  await storage.put(historyKey(doc.snapshot_id as string), bytes);
  if (asLatest) await storage.put(latestKey, bytes);
}

/** One checkpoint by savepoint's own writer, continuing the run from its resumed payload. */
async function savepointCheckpoint(storage: StorageAdapter, stepId: string, at: string): Promise<number> {
  const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
  const payload = plan.payload as SnapshotLifecyclePayload;
  const writer = createWriter({
    storage,
    profile: snapshotLifecycle,
    runId: RUN,
    heartbeatIntervalMs: false,
    coalesceWindowMs: 0,
    clock: manualClock(at),
  });
  const result = await writer.checkpoint({
    source: 'step_boundary',
    status: 'in_progress',
    payload: { ...payload, step_state: { ...payload.step_state, step_id: stepId } },
  });
  await writer.close();
  if (!result.ok || result.outcome !== 'written') throw new Error(`checkpoint not written: ${JSON.stringify(result)}`);
  return result.sequence;
}

const tempDir = tempDirs('savepoint-lifecycle-seq-');
const STORES: readonly (readonly [string, () => StorageAdapter])[] = [
  ['memory', () => memoryStorage()],
  ['fs', () => fsStorage({ dir: tempDir() })],
];

describe('a run another tool wrote, without sequences (regression: numbered by epoch ms)', () => {
  it.each(STORES)(
    '%s: is numbered 1, 2, 3 by created_at (two in the same second stay distinct), and the writer continues at 4',
    async (_name, make) => {
      const storage = make();
      await putForeign(storage, foreignDoc('cp_20260115143000_b2', '2026-01-15T14:30:00Z', '19.2'), false);
      await putForeign(storage, foreignDoc('cp_20260115143000_a1', '2026-01-15T14:30:00Z', '19.1'), false);
      await putForeign(storage, foreignDoc('cp_20260115143500_c3', '2026-01-15T14:35:00Z', '19.3'));

      const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
      expect(plan.snapshot).toMatchObject({ id: 'cp_20260115143500_c3', sequence: 3 });
      expect(plan.nextSequence).toBe(4);
      expect(plan.warnings.map((w) => w.code)).toContain('checkpoint_sequence_derived');
      expect(plan.warnings.map((w) => w.code)).not.toContain('resume_duplicate_sequence');

      expect(await savepointCheckpoint(storage, '19.4', '2026-01-15T14:40:00Z')).toBe(4);
      const after = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
      expect(after.snapshot.sequence).toBe(4);
      expect((after.payload as SnapshotLifecyclePayload).step_state.step_id).toBe('19.4');
    },
  );

  it('each of several same-second snapshots gets its own number, the newest by id resumed', async () => {
    const storage = memoryStorage();
    for (const suffix of ['a', 'b', 'c'])
      await putForeign(storage, foreignDoc(`cp_20260115143000_${suffix}`, '2026-01-15T14:30:00Z', suffix));
    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN, newerCheck: 'scan' });
    expect(plan.snapshot).toMatchObject({ id: 'cp_20260115143000_c', sequence: 3 });
    expect(plan.warnings.map((w) => w.code)).not.toContain('resume_duplicate_sequence');
  });
});

it('an import seals the numbers resume gives, so the sealed run resumes the same (regression: sealed with epoch ms)', async () => {
  const storage = memoryStorage();
  await putForeign(storage, foreignDoc('cp_20260115143000_b2', '2026-01-15T14:30:00Z', '19.2'), false);
  await putForeign(storage, foreignDoc('cp_20260115143000_a1', '2026-01-15T14:30:00Z', '19.1'), false);
  await putForeign(storage, foreignDoc('cp_20260115143500_c3', '2026-01-15T14:35:00Z', '19.3'));
  const before = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
  await importSnapshotLifecycleRun(storage, RUN, { apply: true });
  const after = await planResume({ storage, profile: snapshotLifecycle, runId: RUN, newerCheck: 'scan' });
  expect(after.warnings.map((w) => w.code)).not.toContain('checkpoint_sequence_derived');
  expect([after.snapshot.id, after.snapshot.sequence, after.nextSequence]).toEqual([before.snapshot.id, 3, 4]);
  const sealed = async (id: string) => JSON.parse(new TextDecoder().decode((await storage.get(historyKey(id)))!.bytes)).sequence;
  expect([await sealed('cp_20260115143000_a1'), await sealed('cp_20260115143000_b2')]).toEqual([1, 2]);
});

describe("another tool's snapshots beside savepoint's own (regression)", () => {
  it('one written after savepoint takes the next number, and savepoint continues after it', async () => {
    const storage = memoryStorage();
    await putForeign(storage, foreignDoc('cp_20260115140000_a1', '2026-01-15T14:00:00Z', '1'));
    expect(await savepointCheckpoint(storage, '2', '2026-01-15T14:10:00Z')).toBe(2);
    await putForeign(storage, foreignDoc('cp_20260115142000_f9', '2026-01-15T14:20:00Z', '3'));

    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN });
    expect(plan.snapshot).toMatchObject({ id: 'cp_20260115142000_f9', sequence: 3 });
    expect(await savepointCheckpoint(storage, '4', '2026-01-15T14:30:00Z')).toBe(4);
    expect((await planResume({ storage, profile: snapshotLifecycle, runId: RUN })).snapshot.sequence).toBe(4);
  });

  it("one older by time than savepoint's newest is not resumed ahead of it, whatever the newer check", async () => {
    const storage = memoryStorage();
    await putForeign(storage, foreignDoc('cp_20260115140000_a1', '2026-01-15T14:00:00Z', '1'));
    expect(await savepointCheckpoint(storage, '2', '2026-01-15T14:10:00Z')).toBe(2);
    expect(await savepointCheckpoint(storage, '3', '2026-01-15T14:20:00Z')).toBe(3);
    // Another tool's history file from 14:15, written while savepoint held the run (latest.json stays savepoint's).
    await putForeign(storage, foreignDoc('cp_20260115141500_x7', '2026-01-15T14:15:00Z', 'x'), false);

    for (const newerCheck of ['auto', 'scan', 'lock', 'none'] as const) {
      const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN, newerCheck });
      expect(plan.snapshot.sequence, newerCheck).toBe(3);
      expect((plan.payload as SnapshotLifecyclePayload).step_state.step_id, newerCheck).toBe('3');
      expect(plan.nextSequence, newerCheck).toBe(newerCheck === 'scan' ? 5 : 4); // only a scan reads the foreign file
    }
    const next = await savepointCheckpoint(storage, '5', '2026-01-15T14:30:00Z');
    expect(next).toBe(5); // 4 is the foreign one's: numbered after savepoint's 3, as no number fits between 2 and 3
    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: RUN, newerCheck: 'scan' });
    expect(plan.snapshot.sequence).toBe(next);
    expect((plan.payload as SnapshotLifecyclePayload).step_state.step_id).toBe('5');
  });
});
