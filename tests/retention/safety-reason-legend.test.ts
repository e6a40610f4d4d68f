/**
 * snapshot-lifecycle.md: "prune snapshots older than 14 days". A stale run's newest entry stays
 * anyway (a safety rule: resume reads a run's latest snapshot); the plan's table must say why,
 * not only name a reason no rule in its "Rules:" list explains.
 */
import { describe, expect, it } from 'vitest';
import { defaultProfile, formatRetentionPlan, memoryStorage, planRetention } from 'savepoint';
import { buildInventory } from 'savepoint/toolkit';
import { snapshotLifecycleRetention } from 'savepoint/snapshot-lifecycle';
import { DAY, HOUR, writeRun } from '../fixtures/retention/store.js';

const NOW = Date.UTC(2025, 5, 15, 12);

describe('retention plan: safety reasons explained', () => {
  it("keeps a stale in-progress run's latest past the 14-day prune and says why (regression: reason 'latest' unexplained)", async () => {
    const storage = memoryStorage();
    const snaps = Array.from({ length: 4 }, (_, i) => ({ sequence: i + 1, at: NOW - 20 * DAY + i * HOUR, status: 'in_progress' }));
    await writeRun(storage, defaultProfile, 'run-stale', snaps);
    const plan = planRetention(await buildInventory({ storage, profile: defaultProfile }), snapshotLifecycleRetention, NOW);
    const kept = plan.snapshots.filter((p) => p.action !== 'delete');
    expect(kept.map((p) => [p.snapshot.sequence, p.reasons])).toEqual([[4, ['latest']]]);
    const text = formatRetentionPlan(plan);
    expect(text).toContain("latest: a run's latest snapshot (latest.json) is never deleted, whatever its age");
    expect(text).not.toContain('batch-member-kept:');
  });
});
