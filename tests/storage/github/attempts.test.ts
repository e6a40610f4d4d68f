import { describe, expect, it } from 'vitest';
import { createWriter, type CheckpointError } from 'savepoint';
import { initialPhasedPayload, phasedTriggers, phasedWorkflow } from 'savepoint/phased-workflow';
import { newUuidV4 } from '../../../src/contract/ids.js';
import type { GitHubStorageEvent } from 'savepoint/github';
import { envPerTest, text, type Env } from '../../support/github.js';

// phased-workflow-github.md: on_verification_failure "Retry write (max 3 attempts) / If all
// retries fail, log error and continue"; conflict_handling "Max 3 attempts, then log error".
// Before: a persistently failing verify made 12 commit attempts and ~50 requests, a
// moving head 60 attempts and ~295 requests. Now: at most 3 write attempts per checkpoint,
// even with the writer's own retries, and the failure says how many requests it cost.
const env = envPerTest({ storage: { emergencyQueue: 'memory' } });

const refUpdates = (e: Env, from: number): { message?: string }[] =>
  e.gh.requestLog.slice(from).filter((r) => (r as { operation: string }).operation === 'git/update-ref') as { message?: string }[];

async function failingCheckpoint(e: Env, fault: 'corrupt-write' | 'move-head') {
  const w = createWriter({ storage: e.storage, profile: phasedWorkflow, runId: newUuidV4(), clock: e.clock, heartbeatIntervalMs: false });
  const p = initialPhasedPayload('phase_0_intake', new Date(e.clock.now()).toISOString());
  expect((await w.checkpoint(phasedTriggers.phaseComplete(p, 'phase_0', { intake: 'done' }))).ok).toBe(true);
  const from = e.gh.requestLog.length;
  const t0 = e.clock.now();
  // The fault hits the checkpoint's files, not the run's lock: lease renewals are writes of
  // their own (with their own budget), and what is counted here is the checkpoint's attempts.
  const notLock = (r: { path: string }): boolean => !r.path.includes('.savepoint-lock');
  e.gh.faults.add({
    times: 1000,
    ...(fault === 'move-head' ? { operation: 'git/update-ref' } : {}),
    when: notLock,
    fault: { kind: fault },
  });
  const r = await w.checkpoint(phasedTriggers.phaseComplete(p, 'phase_1', { x: 'y' }));
  e.gh.faults.clear();
  // The checkpoint's own requests; the lease's lock reads and renewals are counted apart.
  const requests = e.gh.requestLog.slice(from).filter((q) => notLock(q as { path: string })).length;
  return { r, from, elapsedMs: e.clock.now() - t0, requests, w };
}

describe('at most 3 write attempts per checkpoint', () => {
  it('a read-back that never verifies: 3 commits (then one restoring commit), the writer logs and continues', async () => {
    const e = await env();
    const { r, from, requests } = await failingCheckpoint(e, 'corrupt-write');
    expect(r.ok).toBe(false);
    const error = (r as { error: CheckpointError }).error;
    expect(error.reasonCode).toBe('checkpoint_atomic_write_failed');
    expect(error.details).toMatchObject({ attempts: 3, attemptsExhausted: true, restored: true });
    // Three attempts plus the commit that puts back what the paths held.
    expect(refUpdates(e, from)).toHaveLength(4);
    expect(requests).toBeLessThanOrEqual(16);
    expect(error.details.requests).toBeLessThanOrEqual(requests);
    const failed = e.events.filter((ev): ev is Extract<GitHubStorageEvent, { type: 'write_failed' }> => ev.type === 'write_failed');
    expect(failed[0]).toMatchObject({ level: 'error', attempts: 3, repeated: false, reasonCode: 'checkpoint_atomic_write_failed' });
    expect(failed.slice(1).every((f) => f.repeated && f.requests === 0)).toBe(true);
  });

  it('a head that keeps moving: 3 commit attempts, then checkpoint_conflict with the request count', async () => {
    const e = await env();
    const { r, from, requests, elapsedMs } = await failingCheckpoint(e, 'move-head');
    expect(r.ok).toBe(false);
    const error = (r as { error: CheckpointError }).error;
    expect(error.reasonCode).toBe('checkpoint_conflict');
    expect(error.details).toMatchObject({ attempts: 3, attemptsExhausted: true });
    expect(refUpdates(e, from)).toHaveLength(3);
    expect(requests).toBeLessThanOrEqual(45);
    expect(elapsedMs).toBeLessThan(60_000);
  });

  it('the budget holds for single puts and for batches called directly, and a changed write gets a fresh budget', async () => {
    const e = await env();
    e.gh.faults.add({ times: 1000, operation: 'git/update-ref', fault: { kind: 'move-head' } });
    let from = e.gh.requestLog.length;
    await expect(e.storage.batch([{ type: 'put', key: 'b/x', bytes: text('1') }])).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
      details: { attempts: 3 },
    });
    expect(refUpdates(e, from)).toHaveLength(3);
    // The same write again at once: refused without a request.
    from = e.gh.requestLog.length;
    await expect(e.storage.batch([{ type: 'put', key: 'b/x', bytes: text('1') }])).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
      details: { repeated: true },
    });
    expect(e.gh.requestLog.length).toBe(from);
    e.gh.faults.clear();
    // Another write is not affected; the same one after repeatFailureMs is tried again.
    expect((await e.storage.batch([{ type: 'put', key: 'b/y', bytes: text('2') }]))[0]).toMatchObject({ type: 'put' });
    await e.clock.advance(60_000);
    expect((await e.storage.batch([{ type: 'put', key: 'b/x', bytes: text('1') }]))[0]).toMatchObject({ type: 'put' });

    e.gh.faults.add({ times: 1000, operation: 'repos/create-or-update-file-contents', fault: { kind: 'corrupt-write' } });
    from = e.gh.requestLog.length;
    await expect(e.storage.put('p/x', text('1'))).rejects.toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
      details: { attempts: 3 },
    });
    expect(
      e.gh.requestLog.slice(from).filter((r) => (r as { operation: string }).operation === 'repos/create-or-update-file-contents'),
    ).toHaveLength(3);
  });
});
