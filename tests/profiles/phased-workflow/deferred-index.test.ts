/**
 * For profiles without a per-run policy (phasedWorkflow): a run's
 * `index.json` stays complete and spec-exact, but a long run rewrites it at a geometric
 * cadence (every max(1, n/16) checkpoints) instead of with every checkpoint, so the bytes
 * written per checkpoint do not grow with the run. Readers and the next writer reconcile
 * the held-back entries from a listing, also after a crash at any write.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, findIncompleteRuns, memoryStorage, planResume, type StorageAdapter } from 'savepoint';
import { decodeRunIndex } from 'savepoint/toolkit';
import { createPhasedWorkflowProfile, initialPhasedPayload } from 'savepoint/phased-workflow';
import { faultyStorage } from 'savepoint/testing';
import { newUuidV4 } from '../../../src/contract/ids.js';

/** The geometric cadence from the first entry (the default profile indexes every checkpoint up to 1000 entries, see index-exact.test.ts). */
const phasedWorkflow = createPhasedWorkflowProfile({ indexEveryCheckpointUpTo: 0 });

async function historyKeys(storage: StorageAdapter, runId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const e of storage.list(`checkpoints/${runId}/`))
    if (phasedWorkflow.layout.classify(e.key)?.kind === 'history') keys.push(e.key);
  return keys.sort();
}

async function indexOf(storage: StorageAdapter, runId: string) {
  const stored = await storage.get(phasedWorkflow.layout.indexKey!(runId));
  return stored ? decodeRunIndex(stored.bytes) : undefined;
}

function stepper(storage: StorageAdapter, runId: string, maxAttempts = 3) {
  const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false, maxAttempts });
  const payload = initialPhasedPayload('phase_1_plan', '2026-01-15T14:00:00.000Z');
  return {
    writer,
    step: (i: number, status = 'in_progress') => {
      payload.state_snapshot.current_phase_state.progress = { i };
      return writer.checkpoint({ source: 'manual', status, payload });
    },
  };
}

/** The index lists exactly the run's history files, once each, in sequence order. */
async function expectComplete(storage: StorageAdapter, runId: string, what: string): Promise<void> {
  const files = await historyKeys(storage, runId);
  const index = await indexOf(storage, runId);
  expect(index, what).toBeDefined();
  expect([...index!.checkpoints.map((e) => e.file_path)].sort(), what).toEqual(files);
  expect(index!.checkpoint_count, what).toBe(files.length);
  const sequences = index!.checkpoints.map((e) => e.sequence);
  expect(sequences, what).toEqual(Array.from({ length: files.length }, (_, k) => k + 1));
}

describe('phasedWorkflow index at constant cost per checkpoint', () => {
  it('a long run rewrites index.json O(1) times per checkpoint amortized, never more than 1/16 behind, complete after close', async () => {
    const inner = memoryStorage();
    const counting = faultyStorage(inner); // no faults: records every operation and the keys it touches
    const runId = newUuidV4();
    const indexKey = phasedWorkflow.layout.indexKey!(runId);
    const run = stepper(counting, runId);
    const total = 1200;
    let lagSeen = 0;
    for (let i = 1; i <= total; i++) {
      const r = await run.step(i);
      if (!r.ok) throw r.error;
      if (i % 97 !== 0) continue;
      const index = (await indexOf(inner, runId))!;
      const lag = i - index.checkpoint_count;
      lagSeen = Math.max(lagSeen, lag);
      // Spec-exact and never ahead of history; at most max(1, n/16) entries held back.
      expect(index.checkpoints.map((e) => e.sequence)).toEqual(Array.from({ length: index.checkpoint_count }, (_, k) => k + 1));
      expect(lag).toBeLessThanOrEqual(Math.max(1, Math.floor(index.checkpoint_count / 16)));
      // Readers see the newest checkpoint although the index does not list it yet.
      const plan = await planResume({ storage: inner, profile: phasedWorkflow, runId });
      expect(plan.snapshot?.sequence).toBe(i);
      const incomplete = await findIncompleteRuns({ storage: inner, profile: phasedWorkflow });
      expect(incomplete.map((x) => [x.runId, x.sequence])).toEqual([[runId, i]]);
    }
    expect(lagSeen).toBeGreaterThan(1);
    const indexWrites = counting.log.filter((op) => op.operation !== 'get' && op.operation !== 'list' && op.keys.includes(indexKey)).length;
    // Every checkpoint up to 32 entries, then ~16·ln(1200/32) ≈ 58 more: not one per checkpoint.
    expect(indexWrites).toBeLessThanOrEqual(120);
    await run.writer.close();
    await expectComplete(inner, runId, 'after close');
  }, 60_000);

  it('a terminal status brings the index up to date at once, without waiting for close', async () => {
    const storage = memoryStorage();
    const runId = newUuidV4();
    const run = stepper(storage, runId);
    for (let i = 1; i <= 300; i++) expect((await run.step(i)).ok).toBe(true);
    expect((await indexOf(storage, runId))!.checkpoint_count).toBeLessThan(300);
    expect((await run.step(301, 'completed')).ok).toBe(true);
    await expectComplete(storage, runId, 'after completed');
    await run.writer.close();
  }, 30_000);

  it('a crash at any write around a held-back index update leaves a run the next writer resumes and indexes completely', async () => {
    const first = 272; // index of ~256 entries: updates held back 16 at a time
    for (let at = 254; at <= first; at++) {
      for (const action of ['crash', 'crash-after'] as const) {
        const what = `${action} at write ${at}`;
        const inner = memoryStorage();
        const runId = newUuidV4();
        const w1 = stepper(faultyStorage(inner, { at, action, count: 'writes' }), runId, 1);
        for (let i = 1; i <= first; i++) await w1.step(i);
        await w1.writer.close().catch(() => undefined); // write #272 is close()'s index update
        const before = await planResume({ storage: inner, profile: phasedWorkflow, runId });
        const landed = before.snapshot!.sequence;
        expect(landed, what).toBe(action === 'crash' ? Math.min(at, first) : Math.min(at + 1, first));
        const w2 = stepper(inner, runId);
        for (let i = 1; i <= 20; i++) {
          const r = await w2.step(1000 + i);
          if (!r.ok) throw r.error;
          expect(r.sequence, what).toBe(landed + i);
        }
        await w2.writer.close();
        await expectComplete(inner, runId, what);
        const after = await planResume({ storage: inner, profile: phasedWorkflow, runId });
        expect(after.snapshot?.sequence, what).toBe(landed + 20);
      }
    }
  }, 120_000);
});
