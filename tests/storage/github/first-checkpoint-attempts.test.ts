/**
 * phased-workflow-github.md: "Retry write (max 3 attempts)", "Max 3 attempts, then log error" —
 * for every checkpoint, a run's first included. The first checkpoint creates latest.json and
 * index.json too (create-only, carrying times), so each writer retry looked like a new write
 * and got a fresh budget: 12 commits on a read-back that never matches, 45 on a moving head.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, type CheckpointError } from 'savepoint';
import { initialPhasedPayload, phasedTriggers, phasedWorkflow } from 'savepoint/phased-workflow';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { envPerTest, type Env } from '../../support/github.js';

const env = envPerTest({ storage: { emergencyQueue: 'memory' } });
// Lease renewals are writes of their own, with their own budget: only the checkpoint's are counted.
const notLock = (r: { path: string }): boolean => !r.path.includes('.savepoint-lock');

async function firstCheckpoint(e: Env, fault: 'corrupt-write' | 'move-head') {
  const w = createWriter({ storage: e.storage, profile: phasedWorkflow, runId: newUuidV4(), clock: e.clock, heartbeatIntervalMs: false });
  const p = initialPhasedPayload('phase_0_intake', new Date(e.clock.now()).toISOString());
  const from = e.gh.requestLog.length;
  e.gh.faults.add({
    times: 1000,
    ...(fault === 'move-head' ? { operation: 'git/update-ref' } : {}),
    when: notLock,
    fault: { kind: fault },
  });
  const r = await w.checkpoint(phasedTriggers.phaseComplete(p, 'phase_0', { intake: 'done' }));
  e.gh.faults.clear();
  const log = (e.gh.requestLog.slice(from) as { operation: string; path: string }[]).filter(notLock);
  await w.close().catch(() => undefined);
  return { r, refUpdates: log.filter((q) => q.operation === 'git/update-ref').length };
}

describe("a run's first checkpoint on GitHub: at most 3 write attempts", () => {
  it('a read-back that never verifies: 3 commits and the restoring one (regression: 12)', async () => {
    const { r, refUpdates } = await firstCheckpoint(await env(), 'corrupt-write');
    expect(r.ok).toBe(false);
    expect((r as { error: CheckpointError }).error.reasonCode).toBe('checkpoint_atomic_write_failed');
    expect(refUpdates).toBe(4);
  });

  it('a head that keeps moving: 3 commit attempts (regression: 45)', async () => {
    const { r, refUpdates } = await firstCheckpoint(await env(), 'move-head');
    expect(r.ok).toBe(false);
    expect((r as { error: CheckpointError }).error.reasonCode).toBe('checkpoint_conflict');
    expect(refUpdates).toBe(3);
  });
});
