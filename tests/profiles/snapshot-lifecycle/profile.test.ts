import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsStorage } from 'savepoint/fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  createWriter,
  memoryStorage,
  planResume,
  CheckpointError,
  isCheckpointError,
  parseJson,
  type JsonObject,
} from 'savepoint';
import {
  checkpointWithOutcomes,
  createCommandOutcomeRecorder,
  heartbeatWithOutcomes,
  createSnapshotLifecycleProfile,
  importSnapshotLifecycleDocument,
  lifecycleTriggers,
  snapshotLifecycle,
  snapshotLifecycleJsonSchema,
  snapshotLifecycleResumeRule,
  snapshotLifecycleRetention,
  SnapshotLifecycleDocumentSchema,
  type LifecycleCommandOutcome,
  type SnapshotLifecyclePayload,
} from 'savepoint/snapshot-lifecycle';
import { readSnapshot, newSnapshotId, gzip, type SnapshotDraft, validateSync } from 'savepoint/toolkit';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { faultyStorage } from 'savepoint/testing';
import { manualClock } from '../../support/clock.js';
import { externalValidator, lifecyclePayloadArb, runIdArb, triggerRecords } from '../arbitraries.js';

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/profiles/${name}`, import.meta.url), 'utf8');

const draftArb: fc.Arbitrary<SnapshotDraft<SnapshotLifecyclePayload>> = fc
  .record({
    ms: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 0, 1) }),
    runId: runIdArb,
    sequence: fc.integer({ min: 1, max: 1e6 }),
    source: fc.constantFrom('step_boundary', 'error_boundary', 'timer', 'manual'),
    sourceDetails: triggerRecords(['step_boundary', 'error_boundary', 'timer', 'manual']),
    priority: fc.option(fc.constantFrom('critical', 'high', 'medium', 'low' as const), { nil: undefined }),
    status: fc.constantFrom('in_progress', 'failed', 'completed', 'paused'),
    payload: lifecyclePayloadArb,
  })
  .map((a) => ({
    id: newSnapshotId(a.ms),
    runId: a.runId,
    sequence: a.sequence,
    createdAt: new Date(a.ms).toISOString(),
    source: a.source,
    sourceDetails: a.sourceDetails,
    ...(a.priority ? { priority: a.priority } : {}),
    status: a.status,
    payload: a.payload,
  }));

describe('snapshotLifecycle document', () => {
  it('snapshot → document → snapshot is the identity; every document validates against the exported JSON Schema (property)', async () => {
    expect(snapshotLifecycleJsonSchema).toBe(snapshotLifecycle.document.jsonSchema);
    const validate = externalValidator(snapshotLifecycleJsonSchema);
    await fc.assert(
      fc.asyncProperty(draftArb, async (draft) => {
        const { bytes, snapshot } = await snapshotLifecycle.document.encode(draft);
        const doc = JSON.parse(utf8Decode(bytes)) as unknown;
        expect(validate(doc)).toEqual([]);
        const { integrity: _i, ...rest } = snapshot;
        expect(rest).toEqual(draft);
        const back = await snapshotLifecycle.document.decode(bytes, 'latest.json');
        expect(back).toEqual(snapshot);
        // and document → snapshot → document is byte-for-byte the identity
        expect((await snapshotLifecycle.document.encode(back)).bytes).toEqual(bytes);
        expect(await snapshotLifecycle.document.decode(gzip(bytes), 'h.json.gz')).toEqual(snapshot);
      }),
      { numRuns: 80 },
    );
  });

  it("writes exactly the spec's top-level fields plus sequence", async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 7 });
    const { bytes } = await snapshotLifecycle.document.encode({ ...draft!, sourceDetails: [] });
    const doc = JSON.parse(utf8Decode(bytes)) as Record<string, unknown>;
    expect(Object.keys(doc).sort()).toEqual(
      [
        'command_outcomes',
        'context_digest',
        'created_at',
        'integrity',
        'run_id',
        'sequence',
        'snapshot_id',
        'source',
        'source_details',
        'status',
        'step_state',
      ].sort(),
    );
    expect(doc.snapshot_id).toMatch(/^cp_\d{8}T\d{9}Z_[0-9a-z]{10}$/);
    expect(Object.keys(doc.integrity as object).sort()).toEqual(['algorithm', 'checksum', 'format_version']);
    expect(SnapshotLifecycleDocumentSchema.safeParse(doc).success).toBe(true);
  });

  it('refuses unknown sources and statuses, and payloads over the command_outcomes bound', async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 3 });
    const outcome: LifecycleCommandOutcome = { kind: 'shell', name: 'ls', result: 'PASS', duration_ms: 1, summary: '' };
    const tooMany = { ...draft!, payload: { ...draft!.payload, command_outcomes: Array.from({ length: 21 }, () => outcome) } };
    await expect(snapshotLifecycle.document.encode(tooMany)).rejects.toMatchObject({ reasonCode: 'checkpoint_schema_invalid' });
    expect(validateSync(snapshotLifecycle.payload, tooMany.payload).issues).toBeDefined();
    const roomy = createSnapshotLifecycleProfile({ maxCommandOutcomes: 21 });
    await expect(roomy.document.encode(tooMany)).resolves.toBeDefined();
    expect(validateSync(roomy.payload, tooMany.payload).issues).toBeUndefined();
    await expect(snapshotLifecycle.document.encode({ ...draft!, source: 'gate_decision' })).rejects.toMatchObject({
      reasonCode: 'checkpoint_schema_invalid',
    });
    await expect(snapshotLifecycle.document.encode({ ...draft!, status: 'timeout' })).rejects.toMatchObject({
      reasonCode: 'checkpoint_schema_invalid',
    });
    expect(() => snapshotLifecycle.trigger('gate_decision')).toThrow(CheckpointError);
    expect(() => createSnapshotLifecycleProfile({ maxCommandOutcomes: 0 })).toThrow(/checkpoint_config_invalid/);
  });
});

describe('snapshotLifecycle profile rules', () => {
  it('has the spec triggers, statuses, heartbeat, coalescing window and layout', () => {
    expect(Object.keys(snapshotLifecycle.triggers).sort()).toEqual(['error_boundary', 'manual', 'step_boundary', 'timer']);
    expect(snapshotLifecycle.statuses.all).toEqual(['in_progress', 'failed', 'completed', 'paused']);
    expect(['failed', 'completed'].every((s) => snapshotLifecycle.isTerminal(s))).toBe(true);
    expect(['in_progress', 'paused'].some((s) => snapshotLifecycle.isTerminal(s))).toBe(false);
    expect(snapshotLifecycle.heartbeat).toEqual({
      source: 'timer',
      intervalMs: 120_000,
      whenUnchanged: 'write',
      payload: expect.any(Function),
    });
    expect(snapshotLifecycle.coalesceWindowMs).toBe(3000);
    expect(createSnapshotLifecycleProfile({ heartbeatIntervalMs: false }).heartbeat).toBe(false);
    expect(snapshotLifecycle.retention).toBe(snapshotLifecycleRetention);
    expect(snapshotLifecycle.resume).toBe(snapshotLifecycleResumeRule);

    const { layout } = snapshotLifecycle;
    const id = newSnapshotId(Date.UTC(2026, 0, 15));
    expect(layout.latestKey('run-1')).toBe('checkpoints/run-1/latest.json');
    const history = layout.historyKey!({ runId: 'run-1', id, sequence: 4, source: 'timer' });
    expect(history).toBe(`checkpoints/run-1/history/${id}.json`);
    expect(layout.classify(history)).toEqual({ kind: 'history', runId: 'run-1', snapshotId: id, compressed: false });
    expect(layout.classify(`${history}.gz`)).toEqual({ kind: 'history', runId: 'run-1', snapshotId: id, compressed: true });
    expect(layout.classify('checkpoints/run-1/latest.json')).toEqual({ kind: 'latest', runId: 'run-1', compressed: false });
    expect(snapshotLifecycle.compressHistory).toBe(true);
    expect(createSnapshotLifecycleProfile({ index: false }).layout.indexKey).toBeUndefined();
    expect(createSnapshotLifecycleProfile({ root: 'state/cp' }).layout.latestKey('r')).toBe('state/cp/r/latest.json');
  });

  it('coalescing ignores only the todo-compliance check time; new command outcomes are material', () => {
    const [p] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 11 });
    const view = (x: SnapshotLifecyclePayload): string => canonicalJson(snapshotLifecycle.materialView(x));
    const rechecked = {
      ...p!,
      step_state: { ...p!.step_state, todo_compliance: { ...p!.step_state.todo_compliance, checked_at: '2030-01-01T00:00:00.000Z' } },
    };
    expect(view(rechecked)).toBe(view(p!));
    const more = {
      ...p!,
      command_outcomes: [
        ...p!.command_outcomes.slice(0, 19),
        { kind: 'shell' as const, name: 'x', result: 'PASS' as const, duration_ms: 0, summary: 'new' },
      ],
    };
    expect(view(more)).not.toBe(view(p!));
    const moved = { ...p!, step_state: { ...p!.step_state, step_ordinal: p!.step_state.step_ordinal + 1 } };
    expect(view(moved)).not.toBe(view(p!));
  });
});

describe('trigger helpers', () => {
  const [base] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 5 });
  it('map each spec boundary to its source, status and step state', () => {
    const entered = lifecycleTriggers.stepEntered(base!, { step_id: '3.1', step_ordinal: 7 });
    expect(entered).toMatchObject({ source: 'step_boundary', status: 'in_progress' });
    expect(entered.payload.step_state).toMatchObject({
      step_id: '3.1',
      step_ordinal: 7,
      step_status: 'in_progress',
      plan_path: base!.step_state.plan_path,
    });
    expect(entered.payload.step_state.resume_hints).toEqual({ eligible: true, reason_code: 'step_in_progress', next_actions: [] });
    const hinted = lifecycleTriggers.stepEntered(base!, {
      step_id: '3.2',
      step_ordinal: 8,
      resume_hints: { eligible: false, reason_code: 'needs_review', next_actions: ['ask'] },
    });
    expect(hinted.payload.step_state.resume_hints).toEqual({ eligible: false, reason_code: 'needs_review', next_actions: ['ask'] });
    for (const s of ['done', 'failed', 'skipped'] as const) {
      const finished = lifecycleTriggers.stepFinished(entered.payload, s);
      expect(finished).toMatchObject({ source: 'step_boundary', status: 'in_progress' });
      expect(finished.payload.step_state.step_status).toBe(s);
      expect(finished.payload.step_state.resume_hints).toEqual({ eligible: true, reason_code: `step_${s}`, next_actions: [] });
    }
    expect(lifecycleTriggers.stepFinished(entered.payload, 'done', 'completed').status).toBe('completed');
    const recoverable = lifecycleTriggers.recoverableError(entered.payload, { reason_code: 'tool_timeout', next_actions: ['retry'] });
    expect(recoverable).toMatchObject({ source: 'error_boundary', status: 'in_progress' });
    expect(recoverable.payload.step_state.resume_hints).toEqual({ eligible: true, reason_code: 'tool_timeout', next_actions: ['retry'] });
    const stop = lifecycleTriggers.forcedStop(entered.payload, { reason_code: 'disk_full' });
    expect(stop).toMatchObject({ source: 'error_boundary', status: 'failed' });
    expect(stop.payload.step_state.resume_hints).toEqual({ eligible: false, reason_code: 'disk_full', next_actions: [] });
    expect(lifecycleTriggers.manual(base!, 'paused')).toEqual({ source: 'manual', status: 'paused', payload: base });
    // each request is valid for the profile
    for (const r of [entered, recoverable, stop]) {
      expect(validateSync(snapshotLifecycle.payload, r.payload).issues).toBeUndefined();
      expect(() => snapshotLifecycle.trigger(r.source)).not.toThrow();
    }
  });
});

describe('command outcome recorder', () => {
  const o = (name: string): LifecycleCommandOutcome => ({ kind: 'shell', name, result: 'PASS', duration_ms: 1, summary: name });

  it('keeps the newest entries within the bound between drains, and counts the discarded ones', () => {
    const rec = createCommandOutcomeRecorder({ limit: 3 });
    for (const n of ['a', 'b', 'c', 'd', 'e']) rec.record(o(n));
    expect(rec.pending().map((x) => x.name)).toEqual(['c', 'd', 'e']);
    expect(rec.discarded).toBe(2);
    expect(rec.drain().map((x) => x.name)).toEqual(['c', 'd', 'e']);
    expect(rec.drain()).toEqual([]);
    expect(rec.discarded).toBe(0);
    rec.record(o('f'));
    rec.restore([o('c'), o('d'), o('e')]);
    expect(rec.pending().map((x) => x.name)).toEqual(['d', 'e', 'f']);
  });

  it('validates outcomes and cuts long summaries', () => {
    const rec = createCommandOutcomeRecorder({ maxSummaryLength: 10 });
    rec.record({ ...o('x'), summary: 'y'.repeat(50) });
    expect(rec.pending()[0]!.summary).toBe(`${'y'.repeat(9)}…`);
    expect(() => rec.record({ ...o('x'), kind: 'bash' as never })).toThrow(/checkpoint_schema_invalid/);
    expect(() => rec.record({ ...o('x'), duration_ms: -1 })).toThrow(/checkpoint_schema_invalid/);
    expect(() => createCommandOutcomeRecorder({ limit: 0 })).toThrow(/checkpoint_config_invalid/);
  });

  it('track measures duration with the injected clock and records PASS, WARN and FAIL without error messages', async () => {
    let now = 1000;
    const rec = createCommandOutcomeRecorder({ now: () => now });
    await rec.track(
      'shell',
      'npm test',
      async () => {
        now += 250;
        return 40;
      },
      { summary: (n) => `${n} tests passed` },
    );
    await rec.track('tool_use', 'lint', () => 'warnings', { warn: () => true });
    await expect(
      rec.track('shell', 'deploy', () => {
        now += 5;
        throw new CheckpointError('checkpoint_rate_limited', 'token ghp_secret was refused');
      }),
    ).rejects.toThrow(CheckpointError);
    const [a, b, c] = rec.drain();
    expect(a).toEqual({ kind: 'shell', name: 'npm test', result: 'PASS', duration_ms: 250, summary: '40 tests passed' });
    expect(b).toMatchObject({ result: 'WARN', summary: 'ok' });
    expect(c).toEqual({
      kind: 'shell',
      name: 'deploy',
      result: 'FAIL',
      duration_ms: 5,
      reason_code: 'checkpoint_rate_limited',
      summary: 'failed: CheckpointError',
    });
    expect(JSON.stringify(c)).not.toContain('ghp_secret');
  });

  it('drained outcomes fit the profile payload', () => {
    const rec = createCommandOutcomeRecorder();
    for (let i = 0; i < 50; i++) rec.record(o(`c${i}`));
    const [p] = fc.sample(lifecyclePayloadArb, { numRuns: 1 });
    expect(validateSync(snapshotLifecycle.payload, { ...p!, command_outcomes: rec.drain() }).issues).toBeUndefined();
  });
});

describe('snapshot-lifecycle fixtures', () => {
  const specText = fixture('snapshot-lifecycle.spec.json');
  const spec = parseJson(specText) as JsonObject;

  it('a hand-built spec document parses, is sealed on import, and keeps every spec field byte for byte', async () => {
    const { bytes, snapshot } = await importSnapshotLifecycleDocument(specText, { sequence: 12 });
    const sealed = parseJson(utf8Decode(bytes)) as JsonObject;
    const { integrity, sequence, ...specFields } = sealed;
    expect(sequence).toBe(12);
    expect(integrity).toMatchObject({ format_version: '1.0', algorithm: 'sha256' });
    expect(canonicalJson(specFields)).toBe(canonicalJson(spec));
    expect(externalValidator(snapshotLifecycle.document.jsonSchema)(sealed)).toEqual([]);
    expect(snapshot).toMatchObject({
      id: spec.snapshot_id,
      runId: 'session-2026-01-15-a',
      sequence: 12,
      source: 'step_boundary',
      status: 'in_progress',
    });
    // the sealed fixture is exactly these bytes, and decoding + re-encoding it is the identity
    const sealedFixture = utf8Encode(fixture('snapshot-lifecycle.sealed.json').trimEnd());
    expect(utf8Decode(bytes)).toBe(utf8Decode(sealedFixture));
    const decoded = await snapshotLifecycle.document.decode(sealedFixture, 'snapshot-lifecycle.sealed.json');
    expect(decoded).toEqual(snapshot);
    expect((await snapshotLifecycle.document.encode(decoded)).bytes).toEqual(sealedFixture);
    // importing is deterministic, and importing the sealed document gives it back unchanged
    expect((await importSnapshotLifecycleDocument(spec, { sequence: 12 })).bytes).toEqual(bytes);
    expect((await importSnapshotLifecycleDocument(sealedFixture)).bytes).toEqual(bytes);
  });

  it('resumes with the profile rule from the step state and resume hints', async () => {
    const { snapshot } = await importSnapshotLifecycleDocument(specText, { sequence: 12 });
    const point = snapshotLifecycle.resume!(snapshot, { now: 0, isTerminal: snapshotLifecycle.isTerminal });
    expect(point).toMatchObject({
      at: '19.2',
      eligible: true,
      reason: 'step_in_progress',
      remaining: ['re-run npm test', "finish the writer's heartbeat"],
    });
    const stopped = lifecycleTriggers.forcedStop(snapshot.payload, { reason_code: 'disk_full' });
    const failed = (
      await snapshotLifecycle.document.encode({ ...snapshot, source: stopped.source, status: stopped.status, payload: stopped.payload })
    ).snapshot;
    expect(snapshotLifecycle.resume!(failed, { now: 0 })).toMatchObject({ eligible: false, reason: 'disk_full' });
  });

  it('an integrity block that does not verify is refused unless resealed; the raw spec document alone does not decode', async () => {
    const sealed = parseJson(fixture('snapshot-lifecycle.sealed.json')) as JsonObject;
    const edited = { ...sealed, status: 'paused' };
    await expect(importSnapshotLifecycleDocument(edited)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
    const resealed = await importSnapshotLifecycleDocument(edited, { reseal: true });
    expect(resealed.snapshot.status).toBe('paused');
    await expect(snapshotLifecycle.document.decode(utf8Encode(JSON.stringify(edited)), 'x')).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
    await expect(snapshotLifecycle.document.decode(utf8Encode(JSON.stringify(spec)), 'x')).rejects.toMatchObject({
      reasonCode: 'checkpoint_schema_invalid',
    });
    // Another tool's extra member is kept, sealed with the rest (not refused); a value the spec enumerates still holds.
    expect((parseJson(utf8Decode((await importSnapshotLifecycleDocument({ ...spec, window: 1 })).bytes)) as JsonObject).window).toBe(1);
    await expect(importSnapshotLifecycleDocument({ ...spec, source: 'cron' })).rejects.toSatisfy((e) =>
      isCheckpointError(e, 'checkpoint_schema_invalid'),
    );
    await expect(importSnapshotLifecycleDocument('not json')).rejects.toSatisfy((e) => isCheckpointError(e, 'checkpoint_schema_invalid'));
  });
});

describe('command outcomes with the writer', () => {
  const o = (name: string): LifecycleCommandOutcome => ({ kind: 'shell', name, result: 'PASS', duration_ms: 3, summary: name });

  it('each snapshot carries the outcomes since the previous one; coalesced or failed checkpoints give them back', async () => {
    const clock = manualClock();
    const rec = createCommandOutcomeRecorder();
    let failing = false;
    const storage = faultyStorage(memoryStorage(), { at: () => (failing ? 'fail' : undefined), count: 'writes' });
    const writer = createWriter({
      storage,
      profile: snapshotLifecycle,
      runId: 'run-o',
      clock,
      heartbeatPayload: heartbeatWithOutcomes(rec),
      maxAttempts: 1,
    });
    const [base] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 17 });

    rec.record(o('a'));
    rec.record(o('b'));
    const first = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.stepEntered(base!, { step_id: 's1', step_ordinal: 1 }));
    expect(first).toMatchObject({ ok: true, outcome: 'written', sequence: 1 });
    expect(first.ok && first.snapshot.payload.command_outcomes.map((x) => x.name)).toEqual(['a', 'b']);
    expect(rec.pending()).toEqual([]);

    // nothing new within 3 s: the second snapshot has no outcomes (material change: the list emptied)...
    await clock.advance(1000);
    const second = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.manual(first.ok ? first.snapshot.payload : base!));
    expect(second).toMatchObject({ ok: true, outcome: 'written', sequence: 2 });
    // ...and a third trigger with no change at all is coalesced into it
    await clock.advance(1000);
    const third = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.manual(second.ok ? second.snapshot.payload : base!));
    expect(third).toMatchObject({ ok: true, outcome: 'coalesced', sequence: 2 });

    // a failed write keeps the outcomes for the next snapshot
    rec.record(o('c'));
    failing = true;
    await clock.advance(5000);
    const failed = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.manual(base!));
    expect(failed.ok).toBe(false);
    expect(rec.pending().map((x) => x.name)).toEqual(['c']);
    failing = false;
    rec.record(o('d'));
    const fourth = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.manual(base!));
    expect(fourth.ok && fourth.snapshot.payload.command_outcomes.map((x) => x.name)).toEqual(['c', 'd']);

    // the 120 s heartbeat drains what was recorded since
    rec.record(o('e'));
    await clock.advance(120_000);
    await writer.flush();
    const latest = await readSnapshot(storage, snapshotLifecycle, snapshotLifecycle.layout.latestKey('run-o'));
    expect(latest).toMatchObject({ source: 'timer', sequence: fourth.ok ? fourth.sequence + 1 : -1 });
    expect(latest!.payload.command_outcomes.map((x) => x.name)).toEqual(['e']);
    expect(rec.pending()).toEqual([]);
    await writer.close();
  });

  it('a heartbeat stores no outcome of the previous snapshot again: without a recorder its command_outcomes are empty', async () => {
    const clock = manualClock();
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: snapshotLifecycle, runId: 'run-hb', clock });
    const [base] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 5 });
    const first = await writer.checkpoint(
      lifecycleTriggers.stepEntered({ ...base!, command_outcomes: [o('a'), o('b')] }, { step_id: 's1', step_ordinal: 1 }),
    );
    expect(first.ok && first.snapshot.payload.command_outcomes.map((x) => x.name)).toEqual(['a', 'b']);
    await clock.advance(120_000);
    await writer.flush();
    const beat = await readSnapshot(storage, snapshotLifecycle, snapshotLifecycle.layout.latestKey('run-hb'));
    expect(beat).toMatchObject({ source: 'timer', sequence: 2 });
    expect(beat!.payload.command_outcomes).toEqual([]);
    // the rest of the state is the last one given
    expect(beat!.payload.step_state).toEqual(first.ok && first.snapshot.payload.step_state);
    await writer.close();
  });

  it('a heartbeat whose write fails puts its drained outcomes back: the next snapshot carries them', async () => {
    const clock = manualClock();
    const rec = createCommandOutcomeRecorder();
    let failing = false;
    const storage = faultyStorage(memoryStorage(), { at: () => (failing ? 'fail' : undefined), count: 'writes' });
    const writer = createWriter({
      storage,
      profile: snapshotLifecycle,
      runId: 'run-hf',
      clock,
      heartbeatPayload: heartbeatWithOutcomes(rec),
      maxAttempts: 1,
    });
    const [base] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 9 });
    const first = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.stepEntered(base!, { step_id: 's1', step_ordinal: 1 }));
    expect(first.ok).toBe(true);
    rec.record(o('e'));
    failing = true;
    await clock.advance(120_000);
    await writer.flush();
    expect(rec.pending().map((x) => x.name)).toEqual(['e']);
    failing = false;
    rec.record(o('f'));
    const next = await checkpointWithOutcomes(writer, rec, lifecycleTriggers.manual(first.ok ? first.snapshot.payload : base!));
    expect(next.ok && next.snapshot.payload.command_outcomes.map((x) => x.name)).toEqual(['e', 'f']);
    expect(rec.pending()).toEqual([]);
    await writer.close();
  });

  it('property: over records, checkpoints, heartbeats and failing writes, every outcome is stored exactly once or is still pending', async () => {
    type Step =
      { kind: 'record' } | { kind: 'checkpoint'; change: boolean } | { kind: 'advance'; ms: number } | { kind: 'failing'; on: boolean };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.constant({ kind: 'record' as const }),
      fc.record({ kind: fc.constant('checkpoint' as const), change: fc.boolean() }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(1000, 3001, 120_000) }),
      fc.record({ kind: fc.constant('failing' as const), on: fc.boolean() }),
    );
    const [base] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 3 });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 25 }), async (steps) => {
        const clock = manualClock();
        const rec = createCommandOutcomeRecorder({ limit: 20 });
        let failing = false;
        const inner = memoryStorage();
        const storage = faultyStorage(inner, { at: () => (failing ? 'fail' : undefined), count: 'writes' });
        const writer = createWriter({
          storage,
          profile: snapshotLifecycle,
          runId: 'run-pp',
          clock,
          heartbeatPayload: heartbeatWithOutcomes(rec),
          maxAttempts: 1,
          autoRetention: false,
        });
        let recorded = 0;
        let ordinal = 1;
        for (const s of steps) {
          if (s.kind === 'record' && rec.pending().length < 20) rec.record(o(`o${recorded++}`));
          if (s.kind === 'checkpoint') {
            if (s.change) ordinal++;
            await checkpointWithOutcomes(
              writer,
              rec,
              lifecycleTriggers.stepEntered(base!, { step_id: `s${ordinal}`, step_ordinal: ordinal }),
            );
          }
          if (s.kind === 'advance') await clock.advance(s.ms);
          if (s.kind === 'failing') failing = s.on;
        }
        failing = false;
        await writer.close();
        const history = [];
        for await (const e of inner.list('checkpoints/run-pp/history/'))
          history.push((await readSnapshot(inner, snapshotLifecycle, e.key))!);
        history.sort((a, b) => a.sequence - b.sequence);
        const stored = history.flatMap((h) => h.payload.command_outcomes.map((x) => x.name));
        const pending = rec.pending().map((x) => x.name);
        // Nothing lost, nothing twice: a failed beat or checkpoint gives its outcomes back (they may then follow newer ones).
        expect([...stored, ...pending].sort()).toEqual(Array.from({ length: recorded }, (_, i) => `o${i}`).sort());
      }),
      { numRuns: 60 },
    );
  });
});

describe('coalescing under immutable history (snapshot-lifecycle.md: "immutable history")', () => {
  it('on real files: a coalesced trigger leaves history/<snapshot_id>.json byte for byte, latest.json lists it, the next history file carries it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'savepoint-lifecycle-immutable-'));
    try {
      const storage = fsStorage({ dir });
      const clock = manualClock();
      const writer = createWriter({ storage, profile: snapshotLifecycle, runId: 'run-i', clock });
      const [base] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 21 });
      const first = await writer.checkpoint(lifecycleTriggers.stepEntered(base!, { step_id: 's1', step_ordinal: 1 }));
      if (!first.ok) throw first.error;
      const historyFile = join(dir, first.key);
      const written = await readFile(historyFile);
      await clock.advance(2000);
      const manual = await writer.checkpoint(lifecycleTriggers.manual(first.snapshot.payload));
      expect(manual).toMatchObject({ ok: true, outcome: 'coalesced', snapshotId: first.snapshotId });
      expect((await readFile(historyFile)).equals(written)).toBe(true);
      const latest = JSON.parse(await readFile(join(dir, 'checkpoints/run-i/latest.json'), 'utf8')) as JsonObject;
      expect(latest.snapshot_id).toBe(first.snapshotId);
      expect(latest.source_details).toEqual([{ source: 'manual', at: '2026-01-15T14:00:02.000Z' }]);
      // a resume restores the snapshot with the trigger coalesced into it
      const plan = await planResume({ storage, profile: snapshotLifecycle, runId: 'run-i', clock });
      expect(plan.snapshot.sourceDetails.map((d) => d.source)).toEqual(['manual']);
      await clock.advance(2000);
      const next = await writer.checkpoint(lifecycleTriggers.stepFinished(first.snapshot.payload, 'done'));
      if (!next.ok) throw next.error;
      const carried = JSON.parse(await readFile(join(dir, next.key), 'utf8')) as JsonObject;
      expect(carried.source_details).toEqual([{ source: 'manual', at: '2026-01-15T14:00:02.000Z', coalesced_into: first.snapshotId }]);
      expect((await readFile(historyFile)).equals(written)).toBe(true);
      await writer.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
