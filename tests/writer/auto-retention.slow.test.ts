/**
 * The writer keeps each run within its profile's per-run policy by
 * itself (keep-last 50 + newest failed/completed for the default profile), incrementally,
 * and never deletes what the policy keeps — also across crashes at every step of a prune.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, preserveRun, type StorageAdapter, type LifecycleStatus } from 'savepoint';
import { decodeRunIndex } from 'savepoint/toolkit';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { faultyStorage } from 'savepoint/testing';
import { latestOf } from '../support/runs.js';
import { manualClock } from '../support/clock.js';
import { countingStorage } from '../support/counting-storage.js';

const STATUSES = ['in_progress', 'failed', 'completed', 'paused'] as const;

async function historyKeys(storage: StorageAdapter, runId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const e of storage.list(`checkpoints/${runId}/history/`)) keys.push(e.key);
  return keys;
}

async function indexOf(storage: StorageAdapter, runId: string) {
  const stored = await storage.get(defaultProfile.layout.indexKey!(runId));
  return stored ? decodeRunIndex(stored.bytes) : undefined;
}

/** Writes `statuses.length` checkpoints with distinct states; returns the sequence → history key map of what was written. */
async function writeRun(
  storage: StorageAdapter,
  runId: string,
  statuses: readonly LifecycleStatus[],
  options: { autoRetention?: boolean } = {},
) {
  const clock = manualClock();
  const writer = createWriter({ storage, profile: defaultProfile, runId, clock, heartbeatIntervalMs: false, ...options });
  const pruned: number[] = [];
  writer.on('pruned', (e) => pruned.push(...e.sequences));
  const keys = new Map<number, string>();
  for (const [i, status] of statuses.entries()) {
    const r = await writer.checkpoint({ source: 'step_boundary', status, payload: { i } });
    if (!r.ok) throw r.error;
    keys.set(r.sequence, r.key);
    await clock.advance(1000);
  }
  await writer.close();
  return { keys, pruned };
}

/** What snapshot-lifecycle.md's per-run rules keep of a run: the newest 50 and the newest failed and completed. */
function policyKeeps(statuses: readonly string[]): Set<number> {
  const keep = new Set<number>();
  for (let s = Math.max(1, statuses.length - 49); s <= statuses.length; s++) keep.add(s);
  for (const status of ['failed', 'completed']) {
    const last = statuses.lastIndexOf(status);
    if (last >= 0) keep.add(last + 1);
  }
  return keep;
}

describe('automatic per-run retention', () => {
  it('keeps a long run of the default profile within keep-last 50 (+ a bounded slack), index and files in step', async () => {
    const storage = memoryStorage();
    const statuses = Array.from({ length: 300 }, (_, i) => (i === 4 ? 'failed' : 'in_progress'));
    const { keys, pruned } = await writeRun(storage, 'long', statuses);
    const files = await historyKeys(storage, 'long');
    expect(files.length).toBeGreaterThanOrEqual(51);
    expect(files.length).toBeLessThanOrEqual(50 + 10 + 1);
    for (const s of policyKeeps(statuses)) expect(files).toContain(keys.get(s));
    const index = await indexOf(storage, 'long');
    expect(index!.checkpoints.map((e) => e.file_path).sort()).toEqual([...files].sort());
    expect(pruned.length).toBe(300 - files.length);
    expect((await latestOf(storage, defaultProfile, 'long'))?.sequence).toBe(300);
  });

  it('a long pruned run rewrites its index with its prunes, not every third checkpoint: never more than its slack or 1/16 of the run behind, complete after close', async () => {
    const inner = memoryStorage();
    const counting = faultyStorage(inner); // no faults: records every operation and the keys it touches
    const indexKey = defaultProfile.layout.indexKey!('long');
    const writer = createWriter({ storage: counting, profile: defaultProfile, runId: 'long', heartbeatIntervalMs: false });
    const total = 1000;
    for (let i = 1; i <= total; i++) {
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } });
      if (!r.ok) throw r.error;
      if (i % 7 !== 0) continue;
      const files = await historyKeys(inner, 'long');
      const listed = new Set((await indexOf(inner, 'long'))?.checkpoints.map((e) => e.file_path) ?? []);
      const held = files.filter((f) => !listed.has(f));
      // Never an entry the index lists without its file, and never more held back than the bounds.
      expect([...listed].filter((f) => !files.includes(f))).toEqual([]);
      expect(held.length).toBeLessThanOrEqual(Math.min(10, Math.max(1, Math.floor(i / 16))));
    }
    const indexWrites = counting.log.filter((op) => op.operation !== 'get' && op.operation !== 'list' && op.keys.includes(indexKey)).length;
    // ~40 while the run grows to 60, then one per prune of 10 (~94); every third checkpoint would be ~350.
    expect(indexWrites).toBeLessThanOrEqual(150);
    await writer.close();
    const files = await historyKeys(inner, 'long');
    expect((await indexOf(inner, 'long'))!.checkpoints.map((e) => e.file_path).sort()).toEqual([...files].sort());
  });

  it('with an atomic batch, the pruned files go in the checkpoint batch itself: one storage call per checkpoint, no delete of its own', async () => {
    const inner = memoryStorage();
    const { storage: counting, calls } = countingStorage(inner);
    const statuses = Array.from({ length: 200 }, (): LifecycleStatus => 'in_progress');
    const { pruned } = await writeRun(counting, 'one', statuses);
    expect(pruned.length).toBeGreaterThan(100);
    expect(calls.filter((c) => c === 'delete' || c === 'put')).toEqual([]);
    const deletesInBatches = calls.filter((c) => c.startsWith('batch:')).reduce((n, c) => n + Number(c.slice('batch:'.length)), 0);
    expect(deletesInBatches).toBe(pruned.length);
    const files = await historyKeys(inner, 'one');
    expect((await indexOf(inner, 'one'))!.checkpoints.map((e) => e.file_path).sort()).toEqual([...files].sort());
  });

  it('property: deletes only what the per-run policy lets go', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 140 }), async (statuses) => {
        const storage = memoryStorage();
        const { keys } = await writeRun(storage, 'p', statuses);
        const files = new Set(await historyKeys(storage, 'p'));
        for (const s of policyKeeps(statuses)) expect(files.has(keys.get(s)!), `sequence ${s}`).toBe(true);
        expect(files.size).toBeLessThanOrEqual(Math.max(statuses.length > 60 ? 0 : statuses.length, 60 + 2));
      }),
      { numRuns: 25 },
    );
  });

  it('is off with autoRetention: false, for preserved runs, and for profiles whose policy is cross-run', async () => {
    const storage = memoryStorage();
    const many = Array.from({ length: 80 }, (): LifecycleStatus => 'in_progress');
    await writeRun(storage, 'off', many, { autoRetention: false });
    expect(await historyKeys(storage, 'off')).toHaveLength(80);

    await preserveRun({ storage, profile: defaultProfile, runId: 'kept', reason: 'test' });
    await writeRun(storage, 'kept', many);
    expect(await historyKeys(storage, 'kept')).toHaveLength(80);

    const phased = createWriter({
      storage,
      profile: phasedWorkflow,
      runId: '0b9d5c2e-8f3a-4c1b-9d2e-7a6b5c4d3e2f',
      heartbeatIntervalMs: false,
      clock: manualClock(),
    });
    expect(phased.profile.retention?.rules.some((r) => r.rule === 'keep-last')).toBe(false);
    await phased.close();
  });

  it('rejects a non-boolean autoRetention', () => {
    expect(() => createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'x', autoRetention: 'yes' as never })).toThrow(
      /autoRetention/,
    );
  });

  it('a crash at any write of a prune leaves a resumable run whose index lists only existing files, and the next writer finishes the prune', async () => {
    const statuses = Array.from({ length: 70 }, (): LifecycleStatus => 'in_progress');
    // With an atomic batch per checkpoint, writes 61-75 cover the first prune (index batch, then deletes).
    for (let at = 58; at < 76; at++) {
      for (const action of ['crash', 'crash-after'] as const) {
        const inner = memoryStorage();
        const faulty = faultyStorage(inner, { at, action, count: 'writes' });
        const clock = manualClock();
        const w1 = createWriter({
          storage: faulty,
          profile: defaultProfile,
          runId: 'c',
          clock,
          heartbeatIntervalMs: false,
          maxAttempts: 1,
        });
        for (const [i, status] of statuses.entries()) {
          await w1.checkpoint({ source: 'step_boundary', status, payload: { i } });
          await clock.advance(1000);
        }
        await w1.close().catch(() => undefined);
        const w2 = createWriter({ storage: inner, profile: defaultProfile, runId: 'c', clock, heartbeatIntervalMs: false });
        for (let i = 0; i < 15; i++) {
          const r = await w2.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { after: i } });
          if (!r.ok) throw r.error;
          await clock.advance(1000);
        }
        await w2.close();
        const files = await historyKeys(inner, 'c');
        const index = await indexOf(inner, 'c');
        for (const e of index!.checkpoints) expect(files, `crash ${action} at write ${at}`).toContain(e.file_path);
        expect(files.length, `crash ${action} at write ${at}`).toBeLessThanOrEqual(61);
        const latest = await latestOf(inner, defaultProfile, 'c');
        expect(latest?.payload).toEqual({ after: 14 });
        const newest50 = index!.checkpoints.slice(-50).map((e) => e.sequence);
        expect(newest50).toEqual(Array.from({ length: 50 }, (_, k) => latest!.sequence - 49 + k));
      }
    }
  });
});
