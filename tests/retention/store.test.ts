import { describe, expect, it } from 'vitest';
import {
  applyRetention,
  defaultProfile,
  formatRetentionPlan,
  formatRetentionReport,
  isCheckpointError,
  keepLast,
  keepLatestStatus,
  keepRunTiers,
  listAll,
  memoryStorage,
  planRetention,
  preserveRun,
  type Clock,
  type RetentionPlan,
} from 'savepoint';
import { buildInventory, decodeRunIndex, gunzip, readSnapshot } from 'savepoint/toolkit';
import { decodeRetentionLog } from '../../src/retention/log.js';
import { snapshotLifecycleRetention } from 'savepoint/snapshot-lifecycle';
import { utf8Encode } from '../../src/codec/utf8.js';
import { DAY, HOUR, runKeys, writeRun, type SnapSpec } from '../fixtures/retention/store.js';

const NOW = Date.UTC(2025, 5, 15, 12);
const clock: Clock = { now: () => NOW, setTimeout: () => 0, clearTimeout: () => undefined };
const profile = defaultProfile;

function series(n: number, start: number, step: number, status = 'in_progress'): SnapSpec[] {
  return Array.from({ length: n }, (_, i) => ({ sequence: i + 1, at: start + i * step, status }));
}

describe('buildInventory', () => {
  it('reads status and time from the index, and decodes what the index lacks', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(5, NOW - 5 * HOUR, HOUR), { unindexed: [5] });
    const inv = await buildInventory({ storage, profile });
    expect(inv.runs.map((r) => r.runId)).toEqual(['run-a']);
    const snaps = inv.runs[0]!.snapshots;
    expect(snaps.map((s) => s.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(snaps.map((s) => s.origin)).toEqual(['index', 'index', 'index', 'index', 'document']);
    expect(snaps.filter((s) => s.latest).map((s) => s.sequence)).toEqual([5]);
    expect(inv.problems).toEqual([]);
  });

  it('reports unreadable files instead of dropping them, and never plans to delete them by default', async () => {
    const storage = memoryStorage();
    const keys = await writeRun(storage, profile, 'run-a', series(4, NOW - 30 * DAY, HOUR), { unindexed: [2] });
    await storage.put(keys.get(2)!, utf8Encode('{"not":"a snapshot"}'));
    await storage.put('checkpoints/run-a/history/cp_20250101T000000000Z_zzzz.json', utf8Encode('garbage'));
    const inv = await buildInventory({ storage, profile });
    expect(inv.problems.map((p) => [p.key, p.reasonCode])).toEqual([
      ['checkpoints/run-a/history/cp_20250101T000000000Z_zzzz.json', 'checkpoint_schema_invalid'],
      [keys.get(2)!, 'checkpoint_schema_invalid'],
    ]);
    expect(inv.runs[0]!.unreadable.map((u) => u.key).sort()).toEqual(
      [keys.get(2)!, 'checkpoints/run-a/history/cp_20250101T000000000Z_zzzz.json'].sort(),
    );
    const plan = planRetention(inv, { rules: [keepLast(1)] }, NOW);
    expect(plan.unreadable.every((u) => u.action === 'keep')).toBe(true);
    const deleted = plan.operations.filter((o) => o.type === 'delete').map((o) => o.key);
    expect(deleted).not.toContain(keys.get(2));
    await applyRetention({ storage, profile, plan, clock });
    expect(await storage.get(keys.get(2)!)).toBeDefined();
    // …and the explicit flag deletes them.
    const plan2 = planRetention(await buildInventory({ storage, profile }), { rules: [keepLast(1)] }, NOW, { deleteUnreadable: true });
    await applyRetention({ storage, profile, plan: plan2, clock });
    expect(await storage.get(keys.get(2)!)).toBeUndefined();
  });

  it('ignores keys outside the layout', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(3, NOW - 30 * DAY, HOUR));
    await storage.put('checkpoints/run-a/notes.txt', utf8Encode('mine'));
    await storage.put('other/run-a/history/x.json', utf8Encode('{}'));
    const plan = planRetention(await buildInventory({ storage, profile }), { rules: [keepLast(0)] }, NOW);
    await applyRetention({ storage, profile, plan, clock });
    expect(await storage.get('checkpoints/run-a/notes.txt')).toBeDefined();
    expect(await storage.get('other/run-a/history/x.json')).toBeDefined();
  });
});

describe('applyRetention on memory storage', () => {
  it('snapshot-lifecycle defaults: 50 per run, latest failed/completed, 14 days, gzip after 24 h', async () => {
    const storage = memoryStorage();
    // 70 snapshots an hour apart ending now; #3 failed, #10 completed, then in progress again.
    const snaps = series(70, NOW - 69 * HOUR, HOUR).map((s) =>
      s.sequence === 3 ? { ...s, status: 'failed' } : s.sequence === 10 ? { ...s, status: 'completed' } : s,
    );
    await writeRun(storage, profile, 'run-a', snaps);
    // An old run: 5 snapshots 20 days ago, the last completed.
    await writeRun(
      storage,
      profile,
      'run-old',
      series(5, NOW - 20 * DAY, HOUR).map((s) => (s.sequence === 5 ? { ...s, status: 'completed' } : s)),
    );

    const inv = await buildInventory({ storage, profile });
    const plan = planRetention(inv, snapshotLifecycleRetention, NOW);
    const byRun = (run: string): RetentionPlan['snapshots'] => plan.snapshots.filter((p) => p.snapshot.runId === run);
    const kept = (run: string): number[] =>
      byRun(run)
        .filter((p) => p.action === 'keep' || p.action === 'compress')
        .map((p) => p.snapshot.sequence);

    expect(kept('run-a')).toEqual([3, 10, ...Array.from({ length: 50 }, (_, i) => 21 + i)]);
    expect(byRun('run-a').find((p) => p.snapshot.sequence === 3)!.reasons).toEqual(['keep-latest-failed']);
    expect(byRun('run-a').find((p) => p.snapshot.sequence === 70)!.reasons).toEqual(['latest', 'keep-last']);
    // Older than 24 h and kept → compressed; the last 24 h stay plain.
    const compressed = byRun('run-a')
      .filter((p) => p.action === 'compress')
      .map((p) => p.snapshot.sequence);
    expect(compressed).toEqual([3, 10, ...Array.from({ length: 70 - 24 - 20 }, (_, i) => 21 + i)]);
    // run-old: everything is older than 14 days; only the latest (completed) stays.
    expect(kept('run-old')).toEqual([5]);
    expect(byRun('run-old')[4]!.reasons).toEqual(['latest', 'keep-latest-completed']);

    const report = await applyRetention({ storage, profile, plan, clock });
    expect(report.status).toBe('completed');
    expect(report.totals.compressed).toBe(compressed.length + 1); // run-old's latest history entry too
    const keys = await runKeys(storage, profile, 'run-a');
    expect(keys.filter((k) => k.includes('/history/')).length).toBe(52);
    expect(keys.filter((k) => k.endsWith('.json.gz')).length).toBe(compressed.length);
    expect(await storage.get('checkpoints/run-a/latest.json')).toBeDefined();
    // The index lists exactly what is left, with .gz paths for compressed entries.
    const index = decodeRunIndex((await storage.get('checkpoints/run-a/index.json'))!.bytes);
    expect(index.checkpoints.map((e) => e.sequence)).toEqual(kept('run-a'));
    for (const e of index.checkpoints) expect(await storage.get(e.file_path)).toBeDefined();
    expect(index.checkpoints.filter((e) => e.file_path.endsWith('.gz')).length).toBe(compressed.length);
    // Compressed entries still read through the one read path.
    const gzKey = index.checkpoints[0]!.file_path;
    const snap = await readSnapshot(storage, profile, gzKey);
    expect(snap?.sequence).toBe(3);
    expect(gunzip((await storage.get(gzKey))!.bytes).length).toBeGreaterThan(0);
    // The log has one entry.
    const log = decodeRetentionLog((await storage.get('checkpoints/retention_log.json'))!.bytes);
    expect(log.entries).toHaveLength(1);
    expect(log.entries[0]).toMatchObject({ status: 'completed', policy: 'snapshotLifecycle', snapshots: { delete: 18 + 4 } });

    // Planning again deletes nothing more.
    const again = planRetention(await buildInventory({ storage, profile }), snapshotLifecycleRetention, NOW);
    expect(again.operations).toEqual([]);
    expect(again.snapshots.every((p) => p.action === 'keep')).toBe(true);
  });

  it('a dry run changes nothing and shows the reasons', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(6, NOW - 6 * DAY, DAY));
    const before = await listAll(storage, '');
    const plan = planRetention(
      await buildInventory({ storage, profile }),
      { name: 'two', rules: [keepLast(2)], compressAfter: '36h' },
      NOW,
    );
    const report = await applyRetention({ storage, profile, plan, dryRun: true, clock });
    expect(report.status).toBe('dry_run');
    expect(report.outcomes.every((o) => o.outcome === 'planned')).toBe(true);
    expect(await listAll(storage, '')).toEqual(before);
    const text = formatRetentionPlan(plan);
    expect(text).toContain('keep-last: newest 2 per run');
    expect(text).toMatch(/run-a\s+6\s+cp_\S+\s+\S+\s+in_progress\s+keep\s+latest, keep-last/);
    expect(text).toMatch(/run-a\s+1\s+cp_\S+\s+\S+\s+in_progress\s+delete\s+-/);
    expect(text).toContain('keep 1, compress 1, summarize 0, delete 4');
    expect(formatRetentionReport(report)).toContain('dry run');
  });

  it('rejects a plan whose keys are outside the profile layout', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(3, NOW - 3 * DAY, DAY));
    const plan = planRetention(await buildInventory({ storage, profile }), { rules: [keepLast(1)] }, NOW);
    const forged: RetentionPlan = {
      ...plan,
      operations: [
        ...plan.operations,
        {
          type: 'delete',
          runId: 'run-a',
          key: 'elsewhere/secret.json',
          kind: 'history',
          reason: 'snapshot',
          size: 1,
          snapshotId: undefined,
          ifVersion: undefined,
        },
      ],
    };
    await expect(applyRetention({ storage, profile, plan: forged, clock })).rejects.toMatchObject({
      reasonCode: 'checkpoint_config_invalid',
    });
    expect((await listAll(storage, '')).length).toBe(5); // nothing touched
    const lying: RetentionPlan = {
      ...plan,
      operations: [
        {
          type: 'delete',
          runId: 'run-b',
          key: 'checkpoints/run-a/latest.json',
          kind: 'latest',
          reason: 'snapshot',
          size: 1,
          snapshotId: undefined,
          ifVersion: undefined,
        },
      ],
    };
    await expect(applyRetention({ storage, profile, plan: lying, clock })).rejects.toMatchObject({
      reasonCode: 'checkpoint_config_invalid',
    });
  });

  it('keeps every snapshot of a preserved run', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(5, NOW - 30 * DAY, HOUR));
    await writeRun(storage, profile, 'run-b', series(5, NOW - 30 * DAY, HOUR));
    await preserveRun({ storage, profile, runId: 'run-b', reason: 'interesting failure', clock });
    const plan = planRetention(await buildInventory({ storage, profile }), { rules: [keepLast(1)] }, NOW);
    expect(
      plan.snapshots.filter((p) => p.snapshot.runId === 'run-b').every((p) => p.action === 'keep' && p.reasons.includes('preserved-run')),
    ).toBe(true);
    expect(plan.snapshots.filter((p) => p.snapshot.runId === 'run-a' && p.action === 'delete')).toHaveLength(4);
  });

  it('treats an unreadable preserved_runs.json as "everything preserved"', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(5, NOW - 30 * DAY, HOUR));
    await storage.put('checkpoints/preserved_runs.json', utf8Encode('{"runs": 42}'));
    const inv = await buildInventory({ storage, profile });
    expect(inv.preservedRunsReadable).toBe(false);
    expect(inv.problems.map((p) => p.kind)).toEqual(['preserved_runs']);
    const plan = planRetention(inv, { rules: [keepLast(1)] }, NOW);
    expect(plan.snapshots.every((p) => p.action === 'keep' && p.reasons.includes('preserved-runs-unreadable'))).toBe(true);
    expect(plan.operations).toEqual([]);
  });

  it('deletes a batch file only when no member is kept, and part files with their snapshot', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(8, NOW - 8 * DAY, DAY), { batch: [2, 3, 4], parts: [1, 5] });
    await writeRun(storage, profile, 'run-b', series(8, NOW - 8 * DAY, DAY), { batch: [5, 6] });
    const inv = await buildInventory({ storage, profile });
    expect(inv.runs[0]!.batches).toHaveLength(1);
    expect(inv.runs[0]!.snapshots.find((s) => s.sequence === 1)!.parts).toHaveLength(1);
    const plan = planRetention(inv, { rules: [keepLast(3)] }, NOW);
    // run-b: 6 is kept (keep-last 3 = 6,7,8) so its batchmate 5 stays too.
    const b5 = plan.snapshots.find((p) => p.snapshot.runId === 'run-b' && p.snapshot.sequence === 5)!;
    expect(b5).toMatchObject({ action: 'keep', reasons: ['batch-member-kept'] });
    await applyRetention({ storage, profile, plan, clock });
    const a = await runKeys(storage, profile, 'run-a');
    expect(a.some((k) => k.includes('batch_'))).toBe(false);
    expect(a.some((k) => k.includes('/parts/1/'))).toBe(false);
    expect(a.some((k) => k.includes('/parts/5/'))).toBe(false);
    const b = await runKeys(storage, profile, 'run-b');
    expect(b.filter((k) => k.includes('batch_'))).toEqual(['checkpoints/run-b/batch_5_6.json']);
    const indexB = decodeRunIndex((await storage.get('checkpoints/run-b/index.json'))!.bytes);
    expect(indexB.checkpoints.map((e) => e.sequence)).toEqual([5, 6, 7, 8]);
  });

  it('finishes an interrupted compression (plain and .gz both present)', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', series(3, NOW - 3 * DAY, DAY), { gzTwin: [1] });
    const inv = await buildInventory({ storage, profile });
    expect(inv.runs[0]!.snapshots[0]!.files.map((f) => f.compressed)).toEqual([false, true]);
    const plan = planRetention(inv, { rules: [keepLast(5)], compressAfter: '1d' }, NOW);
    const report = await applyRetention({ storage, profile, plan, clock });
    expect(report.status).toBe('completed');
    const keys = await runKeys(storage, profile, 'run-a');
    expect(keys.filter((k) => k.includes('/history/'))).toHaveLength(3);
    expect(keys.filter((k) => k.endsWith('.gz'))).toHaveLength(3);
  });

  it('never compresses a corrupt entry and says why', async () => {
    const storage = memoryStorage();
    const keys = await writeRun(storage, profile, 'run-a', series(3, NOW - 3 * DAY, DAY));
    const bad = (await storage.get(keys.get(1)!))!.bytes;
    const text = new TextDecoder().decode(bad).replace('"step":1', '"step":9');
    await storage.put(keys.get(1)!, utf8Encode(text));
    const plan = planRetention(await buildInventory({ storage, profile }), { rules: [keepLast(5)], compressAfter: '1d' }, NOW);
    const report = await applyRetention({ storage, profile, plan, clock });
    expect(report.status).toBe('completed_with_skips');
    expect(report.outcomes.find((o) => o.operation.key === keys.get(1))).toMatchObject({
      outcome: 'skipped',
      reasonCode: 'checkpoint_integrity_mismatch',
    });
    expect(await storage.get(keys.get(1)!)).toBeDefined();
    expect(await storage.get(`${keys.get(1)!}.gz`)).toBeUndefined();
    const index = decodeRunIndex((await storage.get('checkpoints/run-a/index.json'))!.bytes);
    expect(index.checkpoints[0]!.file_path).toBe(keys.get(1));
    expect(index.checkpoints[1]!.file_path).toBe(`${keys.get(2)!}.gz`);
  });

  it('stops on a storage failure with checkpoint_retention_prune_failed and what was done', async () => {
    const { faultyStorage } = await import('savepoint/testing');
    const inner = memoryStorage();
    await writeRun(inner, profile, 'run-a', series(6, NOW - 6 * DAY, DAY));
    const plan = planRetention(await buildInventory({ storage: inner, profile }), { rules: [keepLast(2)] }, NOW);
    const storage = faultyStorage(inner, { at: 2, action: 'fail', count: 'writes' });
    try {
      await applyRetention({ storage, profile, plan, clock });
      expect.unreachable();
    } catch (err) {
      expect(isCheckpointError(err, 'checkpoint_retention_prune_failed')).toBe(true);
      const e = err as { report: { outcomes: { outcome: string }[]; totals: { filesDeleted: number } }; details: Record<string, unknown> };
      // The index is updated first (it must never name a deleted file), then the files go.
      expect(e.report.outcomes.map((o) => (o as unknown as { operation: { type: string } }).operation.type)).toEqual([
        'update-index',
        'delete',
        'delete',
      ]);
      expect(e.report.totals.filesDeleted).toBe(1);
      expect(e.report.outcomes.map((o) => o.outcome)).toEqual(['done', 'done', 'failed']);
      expect(e.details).toMatchObject({ operationsDone: 2, failedOperation: 'delete' });
    }
    // Running again converges.
    const again = planRetention(await buildInventory({ storage: inner, profile }), { rules: [keepLast(2)] }, NOW);
    await applyRetention({ storage: inner, profile, plan: again, clock });
    const keys = await runKeys(inner, profile, 'run-a');
    expect(keys.filter((k) => k.includes('/history/'))).toHaveLength(2);
  });

  it('archives old runs with run tiers: summary first, final snapshot kept unless allowRunDeletion', async () => {
    const storage = memoryStorage();
    for (let r = 0; r < 5; r++)
      await writeRun(storage, profile, `run-${r}`, series(3, NOW - (10 - r) * DAY, HOUR, r === 0 ? 'completed' : 'in_progress'));
    const policy = { name: 'tiers', rules: [keepRunTiers({ keepAll: 1, keepFinal: 2 })] };
    const plan = planRetention(await buildInventory({ storage, profile }), policy, NOW);
    expect(plan.runs.map((r) => [r.runId, r.rank, r.tier, r.summary])).toEqual([
      ['run-0', 5, 'archive', 'write'],
      ['run-1', 4, 'archive', 'write'],
      ['run-2', 3, 'final', 'write'],
      ['run-3', 2, 'final', 'write'],
      ['run-4', 1, 'recent', 'none'],
    ]);
    await applyRetention({ storage, profile, plan, clock });
    expect(await runKeys(storage, profile, 'run-0')).toEqual([
      'checkpoints/run-0/history/' +
        plan.snapshots.find((p) => p.snapshot.runId === 'run-0' && p.snapshot.sequence === 3)!.snapshot.id +
        '.json',
      'checkpoints/run-0/index.json',
      'checkpoints/run-0/latest.json',
      'checkpoints/run-0/summary.json',
    ]);
    const summary = JSON.parse(new TextDecoder().decode((await storage.get('checkpoints/run-0/summary.json'))!.bytes));
    expect(summary).toMatchObject({
      run_id: 'run-0',
      started_at: new Date(NOW - 10 * DAY).toISOString(),
      completed_at: new Date(NOW - 10 * DAY + 2 * HOUR).toISOString(),
      final_status: 'completed',
      checkpoint_count: 3,
    });
    expect(summary).not.toHaveProperty('phases_completed');
    const full = planRetention(await buildInventory({ storage, profile }), policy, NOW, { allowRunDeletion: true });
    expect(full.runs.filter((r) => r.deleteRun).map((r) => r.runId)).toEqual(['run-0', 'run-1']);
    await applyRetention({ storage, profile, plan: full, clock });
    expect(await runKeys(storage, profile, 'run-0')).toEqual(['checkpoints/run-0/summary.json']);
    expect(await runKeys(storage, profile, 'run-3')).toHaveLength(4);
    const again = planRetention(await buildInventory({ storage, profile }), policy, NOW, { allowRunDeletion: true });
    expect(again.operations).toEqual([]);
    expect(again.runs.map((r) => r.rank)).toEqual([5, 4, 3, 2, 1]);
  });
});

describe('keepLatestStatus', () => {
  it('keeps the latest failed and completed even when older than any other rule reaches', async () => {
    const storage = memoryStorage();
    await writeRun(storage, profile, 'run-a', [
      { sequence: 1, at: NOW - 40 * DAY, status: 'failed' },
      { sequence: 2, at: NOW - 39 * DAY, status: 'failed' },
      { sequence: 3, at: NOW - 38 * DAY, status: 'completed' },
      { sequence: 4, at: NOW - 1 * DAY, status: 'in_progress' },
    ]);
    const plan = planRetention(
      await buildInventory({ storage, profile }),
      { rules: [keepLast(1), keepLatestStatus('failed'), keepLatestStatus('completed')] },
      NOW,
    );
    expect(plan.snapshots.map((p) => p.action)).toEqual(['delete', 'keep', 'keep', 'keep']);
  });
});
