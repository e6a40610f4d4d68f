import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, isCheckpointError, memoryStorage, parseJson, type JsonObject } from 'savepoint';
import {
  createPlanExecutorProfile,
  importPlanExecutorDocument,
  planExecutor,
  planExecutorJsonSchema,
  planExecutorResumeRule,
  planExecutorTriggers,
  planResumeFields,
  planStatusSummary,
  PlanExecutorSpecDocumentSchema,
  type PlanExecutorPayload,
} from 'savepoint/plan-executor';
import { gzip, newSnapshotId, readSnapshot, type SnapshotDraft, validateSync } from 'savepoint/toolkit';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { externalValidator, rfc3339, text, triggerRecords } from '../arbitraries.js';

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/profiles/${name}`, import.meta.url), 'utf8');
const TRIGGERS = ['plan_start', 'task_complete', 'task_failed', 'timeout', 'manual'] as const;
const planNumberArb = fc.stringMatching(/^[0-9]{2}[a-z0-9._-]{0,4}$/);
const sha = fc.stringMatching(/^[0-9a-f]{6,40}$/);

const payloadArb = (planNumber: string): fc.Arbitrary<PlanExecutorPayload> =>
  fc.record(
    {
      plan_number: fc.constant(planNumber),
      current_task_index: fc.nat(50),
      current_task: text,
      total_tasks: fc.nat(60),
      completed_tasks: fc.array(fc.record({ name: text, commit: sha }), { maxLength: 4 }),
      remaining_tasks: fc.array(fc.record({ name: text }), { maxLength: 4 }),
      task_commits: fc.dictionary(fc.nat(60).map(String), sha, { maxKeys: 4 }),
      files_modified: fc.array(text, { maxLength: 4 }),
      partial_commits: fc.array(sha, { maxLength: 3 }),
      error: fc.option(text, { nil: null }),
    },
    { requiredKeys: ['plan_number', 'current_task_index', 'current_task'] },
  );

const draftArb: fc.Arbitrary<SnapshotDraft<PlanExecutorPayload>> = planNumberArb.chain((plan) =>
  fc
    .record({
      ms: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 0, 1) }),
      sequence: fc.integer({ min: 1, max: 1e6 }),
      source: fc.constantFrom(...TRIGGERS),
      sourceDetails: triggerRecords(TRIGGERS),
      status: fc.constantFrom('in_progress', 'completed', 'failed', 'timeout'),
      createdAt: rfc3339,
      priority: fc.option(fc.constantFrom('critical', 'high', 'medium', 'low' as const), { nil: undefined }),
      payload: payloadArb(plan),
    })
    .map((a) => ({
      id: newSnapshotId(a.ms),
      runId: plan,
      sequence: a.sequence,
      createdAt: a.createdAt,
      source: a.source,
      sourceDetails: a.sourceDetails,
      ...(a.priority ? { priority: a.priority } : {}),
      status: a.status,
      payload: a.payload,
    })),
);

// Restates plan-executor.md's fields on purpose (an oracle): importing PLAN_EXECUTOR_SPEC_MEMBERS would test the code against itself.
const SPEC_FIELDS = [
  'plan_number',
  'current_task_index',
  'current_task',
  'status',
  'last_activity',
  'total_tasks',
  'completed_tasks',
  'remaining_tasks',
  'task_commits',
  'files_modified',
  'partial_commits',
  'error',
];

describe('planExecutor document', () => {
  it('snapshot → document → snapshot is the identity; every document validates against the exported JSON Schema (property)', async () => {
    expect(planExecutorJsonSchema).toBe(planExecutor.document.jsonSchema);
    const validate = externalValidator(planExecutorJsonSchema);
    await fc.assert(
      fc.asyncProperty(draftArb, async (draft) => {
        const { bytes, snapshot } = await planExecutor.document.encode(draft);
        const doc = JSON.parse(utf8Decode(bytes)) as Record<string, unknown>;
        expect(validate(doc)).toEqual([]);
        for (const key of Object.keys(doc)) expect([...SPEC_FIELDS, 'integrity']).toContain(key);
        const { integrity: _i, ...rest } = snapshot;
        expect(rest).toEqual(draft);
        const back = await planExecutor.document.decode(bytes, '02-CHECKPOINT.json');
        expect(back).toEqual(snapshot);
        expect((await planExecutor.document.encode(back)).bytes).toEqual(bytes);
        expect(await planExecutor.document.decode(gzip(bytes), 'x.gz')).toEqual(snapshot);
      }),
      { numRuns: 80 },
    );
  });

  it('adds exactly one object, integrity, holding the checksum and the bookkeeping the spec has no field for', async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 5 });
    const { bytes, snapshot } = await planExecutor.document.encode({
      ...draft!,
      sourceDetails: [{ source: 'manual', at: draft!.createdAt }],
    });
    const doc = JSON.parse(utf8Decode(bytes)) as Record<string, Record<string, unknown>>;
    expect(doc.last_activity).toBe(draft!.createdAt);
    expect(doc.status).toBe(draft!.status);
    expect(Object.keys(doc.integrity!).sort()).toEqual(
      [
        'algorithm',
        'checksum',
        'format_version',
        'sequence',
        'snapshot_id',
        'source',
        'source_details',
        ...(draft!.priority ? ['priority'] : []),
      ].sort(),
    );
    expect(doc.integrity).toMatchObject({ snapshot_id: draft!.id, sequence: draft!.sequence, source: draft!.source });
    expect(snapshot.integrity).toEqual({ format_version: '1.0', algorithm: 'sha256', checksum: doc.integrity!.checksum });
    // the checksum covers the bookkeeping too
    const tampered = { ...doc, integrity: { ...doc.integrity, sequence: draft!.sequence + 1 } };
    await expect(planExecutor.document.decode(utf8Encode(JSON.stringify(tampered)), 'x')).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
    const edited = { ...doc, current_task_index: 99 };
    await expect(planExecutor.document.decode(utf8Encode(JSON.stringify(edited)), 'x')).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
  });

  it('refuses a run id other than plan_number, unknown statuses and malformed fields', async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 8 });
    for (const bad of [
      { ...draft!, runId: `${draft!.runId}x` },
      { ...draft!, status: 'paused' },
      { ...draft!, source: 'step_boundary' },
      { ...draft!, payload: { ...draft!.payload, current_task_index: -1 } },
      { ...draft!, payload: { ...draft!.payload, task_commits: { one: 'abc' } } },
      { ...draft!, payload: { ...draft!.payload, completed_tasks: [{ name: 'x' }] } } as unknown as SnapshotDraft<PlanExecutorPayload>,
    ]) {
      await expect(planExecutor.document.encode(bad)).rejects.toMatchObject({ reasonCode: 'checkpoint_schema_invalid' });
    }
  });
});

describe('planExecutor profile rules', () => {
  it('statuses: timeout is resumable (not terminal), completed and failed end the plan; no heartbeat', () => {
    expect(planExecutor.statuses.all).toEqual(['in_progress', 'completed', 'failed', 'timeout']);
    expect(planExecutor.isTerminal('timeout')).toBe(false);
    expect(planExecutor.isTerminal('in_progress')).toBe(false);
    expect(planExecutor.isTerminal('completed')).toBe(true);
    expect(planExecutor.isTerminal('failed')).toBe(true);
    expect(planExecutor.heartbeat).toBe(false);
    expect(planExecutor.resume).toBe(planExecutorResumeRule);
    expect(planExecutor.retention).toBeUndefined();
    expect(Object.keys(planExecutor.triggers)).toEqual([...TRIGGERS]);
  });

  it('lays out {state_path}/plans/{NN}-CHECKPOINT.json, with history beside it only when asked', () => {
    const { layout } = planExecutor;
    expect(layout.latestKey('02')).toBe('plans/02-CHECKPOINT.json');
    expect(layout.runsPrefix).toBe('plans/');
    expect(layout.historyKey).toBeUndefined();
    expect(layout.classify('plans/02-CHECKPOINT.json')).toEqual({ kind: 'latest', runId: '02', compressed: false });
    expect(layout.classify('plans/02-CHECKPOINT.lock')).toEqual({ kind: 'lock', runId: '02', compressed: false });
    expect(layout.classify('plans/02-PLAN.md')).toBeUndefined();
    expect(layout.classify('plans/02-CHECKPOINT.history/index.json')).toBeUndefined();
    expect(layout.classify('other/02-CHECKPOINT.json')).toBeUndefined();
    expect(() => layout.latestKey('../02')).toThrow(/checkpoint_key_invalid/);

    const withState = createPlanExecutorProfile({ statePath: '.planning/', history: true });
    const l = withState.layout;
    const id = newSnapshotId(Date.UTC(2026, 0, 15));
    expect(l.latestKey('02')).toBe('.planning/plans/02-CHECKPOINT.json');
    const h = l.historyKey!({ runId: '02', id, sequence: 3, source: 'task_complete' });
    expect(h).toBe(`.planning/plans/02-CHECKPOINT.history/${id}.json`);
    expect(l.classify(h)).toEqual({ kind: 'history', runId: '02', snapshotId: id, compressed: false });
    expect(l.classify(`${h}.gz`)).toEqual({ kind: 'history', runId: '02', snapshotId: id, compressed: true });
    expect(l.classify(l.indexKey!('02'))).toEqual({ kind: 'index', runId: '02', compressed: false });
    expect(l.classify(l.latestKey('02'))).toEqual({ kind: 'latest', runId: '02', compressed: false });
    expect(l.classify(l.partKey!({ runId: '02', id, sequence: 3, source: 'manual' }, '1.json'))).toMatchObject({
      kind: 'part',
      runId: '02',
      sequence: 3,
    });
    expect(l.classify('plans/02-CHECKPOINT.json')).toBeUndefined();
    expect(() => createPlanExecutorProfile({ statePath: '../x' })).toThrow(/checkpoint_key_invalid/);
  });

  it('classify inverts the key functions for any plan number (property)', () => {
    const l = createPlanExecutorProfile({ history: true, statePath: 's' }).layout;
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/), fc.integer({ min: 1, max: 1e6 }), (plan, seq) => {
        const id = newSnapshotId(0);
        expect(l.classify(l.latestKey(plan))).toEqual({ kind: 'latest', runId: plan, compressed: false });
        expect(l.classify(l.lockKey(plan))).toEqual({ kind: 'lock', runId: plan, compressed: false });
        expect(l.classify(l.historyKey!({ runId: plan, id, sequence: seq, source: 'manual' }))).toEqual({
          kind: 'history',
          runId: plan,
          snapshotId: id,
          compressed: false,
        });
        expect(l.classify(l.partKey!({ runId: plan, id, sequence: seq, source: 'manual' }, 'p.json'))).toMatchObject({
          kind: 'part',
          runId: plan,
          sequence: seq,
        });
      }),
    );
  });
});

describe('executor helpers', () => {
  it('follow a plan from start to completion, recording commits by 1-based task number', async () => {
    let req = planExecutorTriggers.start('03', ['Task 1: Setup', 'Task 2: Models', 'Task 3: Routes']);
    expect(req).toMatchObject({ source: 'plan_start', status: 'in_progress' });
    expect(req.payload).toMatchObject({
      current_task_index: 0,
      current_task: 'Task 1: Setup',
      total_tasks: 3,
      remaining_tasks: [{ name: 'Task 2: Models' }, { name: 'Task 3: Routes' }],
    });
    req = planExecutorTriggers.taskCompleted(req.payload, { commit: 'aaa111', files: ['package.json'] });
    expect(req).toMatchObject({ source: 'task_complete', status: 'in_progress' });
    expect(req.payload).toMatchObject({
      current_task_index: 1,
      current_task: 'Task 2: Models',
      task_commits: { '1': 'aaa111' },
      completed_tasks: [{ name: 'Task 1: Setup', commit: 'aaa111' }],
    });
    const timedOut = planExecutorTriggers.timedOut(req.payload, { partialCommits: ['bbb000'], files: ['src/models.ts'] });
    expect(timedOut).toMatchObject({ source: 'timeout', status: 'timeout' });
    expect(timedOut.payload).toMatchObject({ partial_commits: ['bbb000'], files_modified: ['package.json', 'src/models.ts'] });
    req = planExecutorTriggers.taskCompleted(timedOut.payload, { commit: 'bbb222', files: ['src/models.ts'] });
    expect(req.payload).toMatchObject({ current_task_index: 2, partial_commits: [], files_modified: ['package.json', 'src/models.ts'] });
    const failed = planExecutorTriggers.taskFailed(req.payload, 'tsc: 3 errors');
    expect(failed).toMatchObject({ source: 'task_failed', status: 'failed', payload: { error: 'tsc: 3 errors' } });
    req = planExecutorTriggers.taskCompleted(failed.payload, { commit: 'ccc333' });
    expect(req).toMatchObject({ source: 'task_complete', status: 'completed' });
    expect(req.payload).toMatchObject({
      current_task_index: 2,
      current_task: 'Task 3: Routes',
      remaining_tasks: [],
      error: null,
      task_commits: { '1': 'aaa111', '2': 'bbb222', '3': 'ccc333' },
    });
    for (const r of [req, failed, timedOut]) expect(validateSync(planExecutor.payload, r.payload).issues).toBeUndefined();
    expect(planExecutorTriggers.manual(req.payload, 'completed')).toEqual({ source: 'manual', status: 'completed', payload: req.payload });
    expect(() => planExecutorTriggers.start('04', [])).toThrow(/checkpoint_schema_invalid/);
  });

  it('give the consumers their fields: resume (spawn-plan-executor.md) and status display (timeout-handling.md)', async () => {
    const example = parseJson(fixture('plan-executor.spec.json')) as JsonObject;
    const doc = PlanExecutorSpecDocumentSchema.parse(example);
    expect(planResumeFields(doc)).toEqual({
      plan_number: '02',
      total_tasks: 4,
      task_commits: { '1': 'abc123', '2': 'def456' },
      files_modified: ['src/api.ts', 'src/models.ts'],
      last_activity: '2026-01-15T14:30:00Z',
    });
    const { snapshot } = await importPlanExecutorDocument(example);
    expect(planResumeFields(snapshot)).toEqual(planResumeFields(doc));
    const status = planStatusSummary(snapshot, { now: Date.parse('2026-01-15T14:47:30Z') });
    expect(status).toMatchObject({
      plan_number: '02',
      status: 'in_progress',
      current_task: 'Task 3: Add API routes',
      completed_tasks: [
        { name: 'Task 1: Setup', commit: 'abc123' },
        { name: 'Task 2: Models', commit: 'def456' },
      ],
      remaining_tasks: [{ name: 'Task 4: Tests' }],
      partial_commits: [],
      last_activity: '2026-01-15T14:30:00Z',
      idle_ms: 17.5 * 60_000,
    });
    expect(status.lines).toEqual([
      'Plan 02 — in_progress — current: Task 3: Add API routes',
      'Completed (2): Task 1: Setup (abc123), Task 2: Models (def456)',
      'Remaining (1): Task 4: Tests',
      'Partial commits: none',
      'Last activity: 2026-01-15T14:30:00Z (17m 30s ago)',
    ]);
    expect(planStatusSummary(doc, { now: Date.parse('2026-01-15T14:47:30Z') })).toEqual(status);
  });
});

describe('plan-executor.md example', () => {
  const exampleText = fixture('plan-executor.spec.json');
  const example = parseJson(exampleText) as JsonObject;

  it('parses and validates as the spec document, imports, and keeps every field byte for byte through canonical JSON', async () => {
    expect(PlanExecutorSpecDocumentSchema.safeParse(example).success).toBe(true);
    const { bytes, snapshot } = await importPlanExecutorDocument(exampleText);
    const sealed = parseJson(utf8Decode(bytes)) as JsonObject;
    const { integrity, ...specFields } = sealed;
    expect(canonicalJson(specFields)).toBe(canonicalJson(example));
    expect(integrity).toMatchObject({ sequence: 1, source: 'task_complete', source_details: [] });
    expect(externalValidator(planExecutor.document.jsonSchema)(sealed)).toEqual([]);
    expect(snapshot).toMatchObject({
      runId: '02',
      sequence: 1,
      createdAt: '2026-01-15T14:30:00Z',
      status: 'in_progress',
      source: 'task_complete',
    });
    // deterministic: the same example always seals to the same bytes, kept as a fixture
    const sealedFixture = utf8Encode(fixture('plan-executor.sealed.json').trimEnd());
    expect(utf8Decode(bytes)).toBe(utf8Decode(sealedFixture));
    const decoded = await planExecutor.document.decode(sealedFixture, '02-CHECKPOINT.json');
    expect(decoded).toEqual(snapshot);
    expect((await planExecutor.document.encode(decoded)).bytes).toEqual(sealedFixture);
    expect((await importPlanExecutorDocument(sealedFixture)).bytes).toEqual(sealedFixture);
  });

  it('stored where the spec says, it reads back through the one read path', async () => {
    const storage = memoryStorage();
    const { bytes, snapshot } = await importPlanExecutorDocument(example, { sequence: 3 });
    await storage.put('plans/02-CHECKPOINT.json', bytes);
    expect(await readSnapshot(storage, planExecutor, planExecutor.layout.latestKey('02'))).toEqual(snapshot);
  });

  it('resumes at the current task with the profile resume rule; a timed-out copy resumes too, a completed one does not', async () => {
    const { snapshot } = await importPlanExecutorDocument(example);
    const point = planExecutor.resume!(snapshot, { now: Date.parse('2026-01-15T15:00:00Z'), isTerminal: planExecutor.isTerminal });
    expect(point).toMatchObject({
      at: '2',
      eligible: true,
      completed: ['Task 1: Setup', 'Task 2: Models'],
      remaining: ['Task 3: Add API routes', 'Task 4: Tests'],
    });
    const timedOut = (await importPlanExecutorDocument({ ...example, status: 'timeout' })).snapshot;
    expect(planExecutor.resume!(timedOut, { now: 0 })).toMatchObject({ at: '2', eligible: true, reason: 'timeout_resume_current_task' });
    const done = (await importPlanExecutorDocument({ ...example, status: 'completed', remaining_tasks: [] })).snapshot;
    expect(planExecutor.resume!(done, { now: 0 })).toMatchObject({ eligible: false });
  });

  it('import options and failures', async () => {
    const timedOut = await importPlanExecutorDocument({ ...example, status: 'timeout' });
    expect(timedOut.snapshot.source).toBe('timeout');
    const failed = await importPlanExecutorDocument({ ...example, status: 'failed', error: 'boom' });
    expect(failed.snapshot.source).toBe('task_failed');
    const fresh = await importPlanExecutorDocument({ ...example, completed_tasks: [], current_task_index: 0 });
    expect(fresh.snapshot.source).toBe('plan_start');
    const chosen = await importPlanExecutorDocument(example, { sequence: 9, source: 'manual', snapshotId: newSnapshotId(0) });
    expect(chosen.snapshot).toMatchObject({ sequence: 9, source: 'manual' });
    const sealed = parseJson(fixture('plan-executor.sealed.json')) as JsonObject;
    await expect(importPlanExecutorDocument({ ...sealed, current_task: 'Task 4: Tests' })).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
    const resealed = await importPlanExecutorDocument({ ...sealed, current_task: 'Task 4: Tests' }, { reseal: true });
    expect(resealed.snapshot.id).toBe((sealed.integrity as JsonObject).snapshot_id);
    expect(resealed.snapshot.payload.current_task).toBe('Task 4: Tests');
    // Another executor's extra fields are kept, sealed with the rest (not refused).
    const vendor = await importPlanExecutorDocument({ ...example, extra: 1 });
    expect((parseJson(utf8Decode(vendor.bytes)) as JsonObject).extra).toBe(1);
    for (const bad of [
      { ...example, status: 'paused' },
      { ...example, last_activity: 'yesterday' },
    ]) {
      await expect(importPlanExecutorDocument(bad)).rejects.toSatisfy((e) => isCheckpointError(e, 'checkpoint_schema_invalid'));
    }
  });
});
