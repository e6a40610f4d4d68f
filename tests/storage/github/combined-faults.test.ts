/**
 * Combined faults the fault matrix's random schedules found, each replayed as a
 * deterministic example: the adapter must lose no acknowledged write and leave no corrupt
 * file as the newest truth.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, planResume, type BatchOperation } from 'savepoint';
import { initialPhasedPayload, phasedTriggers, phasedWorkflow } from 'savepoint/phased-workflow';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { envPerTest, startEnv, str, text, type Env } from '../../support/github.js';

const env = envPerTest({ storage: { emergencyQueue: 'memory' } });

/** Checkpoint #2 of run r as a writer commits it: its create-only history file and latest. */
const secondCheckpoint = (e: Env): ReturnType<Env['storage']['batch']> =>
  e.storage.batch([
    { type: 'put', key: 'checkpoints/r/cp_002_iteration.json', bytes: text('{"sequence":2}'), ifAbsent: true },
    { type: 'put', key: 'checkpoints/r/latest.json', bytes: text('{"sequence":2}') },
  ]);

/** After a pushed queue: checkpoint #2 stored as sent. */
async function expectSecondCheckpointStored(e: Env): Promise<void> {
  await e.storage.flush();
  expect(e.storage.stats().queued).toBe(0);
  expect(str(e.gh.state.readFile('checkpoints/r/cp_002_iteration.json'))).toBe('{"sequence":2}');
  expect(str(e.gh.state.readFile('checkpoints/r/latest.json'))).toBe('{"sequence":2}');
}

describe('a write whose answer was lost, though it landed', () => {
  it('is read back as it landed, not as this process wrote the key before (the lock write that hid the lease version)', async () => {
    // Before: reads of a key this process wrote preferred that earlier write ("read your
    // writes" against lagging replicas), so a later write of it that landed with its answer
    // lost three times was read as the old bytes. The run lock then fenced its checkpoints with
    // a version the store no longer held, and a queued checkpoint batch could never be pushed.
    const e = await env();
    await e.storage.put('checkpoints/r/.lock.json', text('{"lease":1}'));
    e.gh.faults.add({ fault: { kind: 'network-error', landed: true }, operation: 'repos/create-or-update-file-contents', times: 3 });
    await expect(e.storage.put('checkpoints/r/.lock.json', text('{"lease":2}'))).rejects.toMatchObject({
      reasonCode: 'checkpoint_storage_unavailable',
    });
    e.gh.faults.clear();
    const stored = await e.storage.get('checkpoints/r/.lock.json');
    expect(str(stored?.bytes)).toBe('{"lease":2}');
    expect(str(e.gh.state.readFile('checkpoints/r/.lock.json'))).toBe('{"lease":2}');
  });
});

describe('a corrupt write while the head keeps moving', () => {
  it('is put back when a later attempt loses its race, so no corrupt file is left (and the failure says so)', async () => {
    // Before: the first commit landed mangled, the rewrite lost the race twice (the head moved)
    // and the batch failed with checkpoint_conflict, leaving the mangled cp_ file as the newest.
    const e = await env();
    await e.storage.put('checkpoints/r/latest.json', text('{"sequence":1}'));
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'git/create-tree', times: 2 });
    e.gh.faults.add({ fault: { kind: 'move-head' }, operation: 'git/update-ref', skip: 1, times: 2 });
    const failed = secondCheckpoint(e);
    await expect(failed).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict', details: { attemptsExhausted: true, restored: true } });
    e.gh.faults.clear();
    expect(e.gh.state.readFile('checkpoints/r/cp_002_iteration.json')).toBeUndefined();
    expect(str(e.gh.state.readFile('checkpoints/r/latest.json'))).toBe('{"sequence":1}');
  });
});

describe('a corrupt contents write whose rewrite got no answer', () => {
  it('is put back before the put fails', async () => {
    const e = await env();
    await e.storage.put('checkpoints/r/latest.json', text('{"sequence":1}'));
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'repos/create-or-update-file-contents', times: 1 });
    e.gh.faults.add({ fault: { kind: 'network-error' }, operation: 'repos/create-or-update-file-contents', skip: 1, times: 2 });
    await expect(e.storage.put('checkpoints/r/latest.json', text('{"sequence":2}'))).rejects.toMatchObject({
      details: { attemptsExhausted: true, restored: true },
    });
    e.gh.faults.clear();
    expect(str(e.gh.state.readFile('checkpoints/r/latest.json'))).toBe('{"sequence":1}');
  });
});

describe('when the damaged files cannot be put back either', () => {
  it('the checkpoint fails, and resume skips the corrupt file with its reason', async () => {
    const e = await env();
    const runId = newUuidV4();
    const writer = createWriter({
      storage: e.storage,
      profile: phasedWorkflow,
      runId,
      clock: e.clock,
      heartbeatIntervalMs: false,
      maxAttempts: 1,
    });
    const base = initialPhasedPayload('phase_1_plan', new Date(e.clock.now()).toISOString());
    expect((await writer.checkpoint(phasedTriggers.at('iteration', base))).ok).toBe(true);
    const dir = `checkpoints/${runId}/`;
    // Every commit but the first lands on a head that moved: the corrupt first attempt, then no rewrite and no restore gets through.
    const notLock = (r: { path: string }): boolean => !r.path.includes('.savepoint-lock');
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'git/create-tree', when: notLock, times: 100 });
    e.gh.faults.add({ fault: { kind: 'move-head' }, operation: 'git/update-ref', skip: 1, times: 100 });
    const r = await writer.checkpoint(
      phasedTriggers.at('expensive_op', { ...base, state_snapshot: { ...base.state_snapshot, cost_accumulated: 2 } }),
    );
    e.gh.faults.clear();
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reasonCode).toBe('checkpoint_conflict');
    const corrupt = e.gh.state.listFiles().filter((f) => f.path.startsWith(`${dir}cp_002`));
    expect(corrupt).toHaveLength(1);
    const plan = await planResume({ storage: e.storage, profile: phasedWorkflow, runId, clock: e.clock });
    expect(plan.snapshot.sequence).toBe(1);
    expect(plan.skipped.map((s) => s.key)).toContain(corrupt[0]!.path);
    expect(
      plan.skipped.every((s) => s.reasonCode === 'checkpoint_schema_invalid' || s.reasonCode === 'checkpoint_integrity_mismatch'),
    ).toBe(true);
    expect(plan.warnings.map((w) => w.code)).toContain('resume_files_skipped');
    await writer.close();
  });
});

describe('a corrupt write whose read-back hits the rate limit', () => {
  it('is queued and, when pushed, recognised as its own landed write: rewritten, not a conflict with itself', async () => {
    // Before: the queued batch, sent again "maybe landed", found its create-only cp_ file
    // present with other bytes (its own corrupt write) and failed with checkpoint_conflict on
    // every push: the acknowledged (queued) checkpoint was never stored.
    const e = await env();
    await e.storage.put('checkpoints/r/latest.json', text('{"sequence":1}'));
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'git/create-tree', times: 1 });
    e.gh.faults.add({ fault: { kind: 'primary-rate-limit', status: 403 }, operation: 'repos/get-commit', times: 1 });
    const outcomes = await secondCheckpoint(e);
    expect(outcomes.every((o) => o.type !== 'put' || o.pending === true)).toBe(true);
    e.gh.faults.clear();
    await expectSecondCheckpointStored(e);
  });
});

describe('a write that landed corrupt, then hit the rate limit before it could repair it', () => {
  // Before: queued "maybe landed", it found its own corrupt blob where its condition expected
  // the old version (or no file) and failed with checkpoint_conflict on every push.
  it("a contents put (the run lock's renewal) is pushed from the queue and repairs its own damage", async () => {
    const e = await env();
    const { version } = await e.storage.put('checkpoints/r/.lock.json', text('{"lease":1}'));
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'repos/create-or-update-file-contents', times: 2 });
    e.gh.faults.add({
      fault: { kind: 'primary-rate-limit', status: 429 },
      operation: 'repos/create-or-update-file-contents',
      skip: 2,
      times: 1,
    });
    const r = await e.storage.put('checkpoints/r/.lock.json', text('{"lease":2}'), { ifVersion: version });
    expect(r.pending).toBe(true);
    e.gh.faults.clear();
    await e.storage.flush();
    expect(e.storage.stats().queued).toBe(0);
    expect(str(e.gh.state.readFile('checkpoints/r/.lock.json'))).toBe('{"lease":2}');
  });

  it('a checkpoint batch with a create-only file is pushed from the queue and repairs its own damage', async () => {
    const e = await env();
    await e.storage.put('checkpoints/r/latest.json', text('{"sequence":1}'));
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'git/create-tree', times: 1 });
    e.gh.faults.add({ fault: { kind: 'primary-rate-limit', status: 403 }, operation: 'git/create-tree', skip: 1, times: 1 });
    const outcomes = await secondCheckpoint(e);
    expect(outcomes.every((o) => o.type !== 'put' || o.pending === true)).toBe(true);
    e.gh.faults.clear();
    await expectSecondCheckpointStored(e);
  });
});

describe('a batch whose commits never verify', () => {
  it('is undone whole, its delete as well as its puts: the checkpoint a batch file was to replace stays (fault-matrix seed 1532380187)', async () => {
    // Before: only the puts GitHub stored otherwise were put back. The delete of the checkpoint
    // the batch file joined was left in place, and that checkpoint, acknowledged, was lost.
    const e = await env();
    await e.storage.batch([
      { type: 'put', key: 'checkpoints/r/cp_002_iteration.json', bytes: text('{"sequence":2}'), ifAbsent: true },
      { type: 'put', key: 'checkpoints/r/latest.json', bytes: text('{"sequence":2}') },
    ]);
    e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'git/create-tree', times: 100 });
    const failed = e.storage.batch([
      { type: 'put', key: 'checkpoints/r/batch_2_3.json', bytes: text('{"checkpoints":[2,3]}'), ifAbsent: true },
      { type: 'delete', key: 'checkpoints/r/cp_002_iteration.json' },
      { type: 'put', key: 'checkpoints/r/latest.json', bytes: text('{"sequence":3}') },
    ]);
    await expect(failed).rejects.toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
      details: { attemptsExhausted: true, restored: true },
    });
    e.gh.faults.clear();
    expect(str(e.gh.state.readFile('checkpoints/r/cp_002_iteration.json'))).toBe('{"sequence":2}');
    expect(e.gh.state.readFile('checkpoints/r/batch_2_3.json')).toBeUndefined();
    expect(str(e.gh.state.readFile('checkpoints/r/latest.json'))).toBe('{"sequence":2}');
  });

  it('property: whatever the batch puts and deletes, the repository holds after its failure what it held before', async () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    const op = fc.record({ name: fc.constantFrom(...names), del: fc.boolean(), body: fc.string({ maxLength: 12 }) });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.constantFrom(...names), { minLength: 1 }),
        // At least one put: a batch of deletes alone stores nothing GitHub could damage, and lands as sent.
        fc.uniqueArray(op, { selector: (o) => o.name, minLength: 1, maxLength: 5 }).filter((ops) => ops.some((o) => !o.del)),
        async (stored, ops) => {
          const e = await startEnv({ storage: { emergencyQueue: 'memory' } });
          try {
            const key = (name: string): string => `checkpoints/r/${name}.json`;
            await e.storage.batch(stored.map((name) => ({ type: 'put' as const, key: key(name), bytes: text(`old ${name}`) })));
            const before = new Map(names.map((name) => [name, str(e.gh.state.readFile(key(name)))]));
            e.gh.faults.add({ fault: { kind: 'corrupt-write' }, operation: 'git/create-tree', times: 100 });
            const batch = e.storage.batch(
              ops.map((o): BatchOperation =>
                o.del ? { type: 'delete', key: key(o.name) } : { type: 'put', key: key(o.name), bytes: text(`new ${o.body}`) },
              ),
            );
            await expect(batch).rejects.toMatchObject({ details: { attemptsExhausted: true, restored: true } });
            e.gh.faults.clear();
            for (const name of names) expect(str(e.gh.state.readFile(key(name))), name).toBe(before.get(name));
          } finally {
            await e.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
