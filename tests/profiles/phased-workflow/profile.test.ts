import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  PHASE_KEYS,
  completedPhaseKeys,
  createCostThresholdTrigger,
  createPhasedWorkflowProfile,
  emptyPhaseOutputs,
  importPhasedWorkflowDocument,
  initialPhasedPayload,
  nextPhaseKey,
  parsePhase,
  phaseId,
  phasedRunSummary,
  phasedTriggers,
  phasedWorkflow,
  phasedWorkflowJsonSchema,
  phasedWorkflowResumeRule,
  phasedWorkflowRetention,
  PhasedRunSummarySchema,
  PhasedWorkflowPayloadSchema,
  splitPhasedWorkflowDocument,
  type PhasedWorkflowPayload,
} from 'savepoint/phased-workflow';
import { PART_MARKER } from '../../../src/codec/parts.js';
import { canonicalJson, createWriter, isCheckpointError, memoryStorage, parseJson, type JsonObject } from 'savepoint';
import { decodeRunIndex, gzip, readSnapshot, resolveParts, splitDocument, type SnapshotDraft, validateSync } from 'savepoint/toolkit';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { externalValidator, jsonDouble, jsonObject, jsonValue, nonEmpty, rfc3339, text, triggerRecords } from '../arbitraries.js';

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/profiles/${name}`, import.meta.url), 'utf8');
const TRIGGERS = [
  'phase_complete',
  'gate_decision',
  'circuit_breaker',
  'escalation',
  'iteration',
  'cost_threshold',
  'expensive_op',
  'destructive_op',
  'manual',
] as const;

const phaseArb = fc.tuple(fc.constantFrom(...PHASE_KEYS), fc.stringMatching(/^[a-z][a-z0-9_]{0,12}$/)).map(([k, n]) => `${k}_${n}`);

const phasedPayloadArb: fc.Arbitrary<PhasedWorkflowPayload> = fc.record({
  phase: phaseArb,
  state_snapshot: fc.record({
    phase_outputs: fc.record(
      Object.fromEntries(PHASE_KEYS.map((k) => [k, fc.option(jsonObject, { nil: null })])) as Record<
        (typeof PHASE_KEYS)[number],
        fc.Arbitrary<JsonObject | null>
      >,
    ),
    current_phase_state: fc.record({
      phase: text,
      started_at: text,
      progress: jsonObject,
      partial_output: fc.option(jsonObject, { nil: null }),
    }),
    gate_history: fc.array(fc.record({ gate_id: text, decision: text, score: jsonDouble(), iteration: fc.integer() }), { maxLength: 4 }),
    circuit_breaker_state: jsonObject,
    cost_accumulated: jsonDouble({ min: 0, max: 1e6 }),
    health_history: fc.array(jsonValue, { maxLength: 3 }),
    errors_encountered: fc.array(jsonValue, { maxLength: 3 }),
    active_lessons: fc.array(jsonValue, { maxLength: 3 }),
  }),
  context_fields: fc.record({
    api_metrics: jsonObject,
    fallback_flags: jsonObject,
    iteration_counts: fc.dictionary(
      nonEmpty.filter((k) => k !== '__proto__'),
      fc.nat(50),
      { maxKeys: 3 },
    ),
    warnings: fc.array(jsonValue, { maxLength: 3 }),
  }),
});

const draftArb: fc.Arbitrary<SnapshotDraft<PhasedWorkflowPayload>> = fc
  .record({
    id: fc.uuid({ version: 4 }),
    runId: fc.uuid({ version: 4 }),
    sequence: fc.integer({ min: 1, max: 1e5 }),
    createdAt: rfc3339,
    source: fc.constantFrom(...TRIGGERS),
    sourceDetails: triggerRecords(TRIGGERS),
    status: fc.constantFrom('in_progress', 'paused', 'completed', 'failed'),
    payload: phasedPayloadArb,
  })
  .chain((d) =>
    fc
      .option(fc.constantFrom('critical', 'high', 'medium', 'low' as const), { nil: undefined })
      .map((priority) => (priority ? { ...d, priority } : d)),
  );

describe('phasedWorkflow document', () => {
  it('snapshot → document → snapshot is the identity; every document validates against the exported JSON Schema (property)', async () => {
    expect(phasedWorkflowJsonSchema).toBe(phasedWorkflow.document.jsonSchema);
    const validate = externalValidator(phasedWorkflowJsonSchema);
    await fc.assert(
      fc.asyncProperty(draftArb, async (draft) => {
        const { bytes, snapshot } = await phasedWorkflow.document.encode(draft);
        expect(validate(JSON.parse(utf8Decode(bytes)))).toEqual([]);
        const { integrity: _i, ...rest } = snapshot;
        expect(rest).toEqual(draft);
        const back = await phasedWorkflow.document.decode(bytes, 'latest.json');
        expect(back).toEqual(snapshot);
        expect((await phasedWorkflow.document.encode(back)).bytes).toEqual(bytes);
        expect(await phasedWorkflow.document.decode(gzip(bytes), 'cp.json.gz')).toEqual(snapshot);
      }),
      { numRuns: 60 },
    );
  });

  it("writes the spec's checkpoint_contents plus status, source_details, priority and integrity", async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 2 });
    const { bytes } = await phasedWorkflow.document.encode({ ...draft!, priority: 'high' });
    const doc = JSON.parse(utf8Decode(bytes)) as Record<string, unknown>;
    expect(Object.keys(doc).sort()).toEqual(
      [
        'checkpoint_id',
        'context_fields',
        'integrity',
        'phase',
        'priority',
        'run_id',
        'sequence_number',
        'source_details',
        'state_snapshot',
        'status',
        'timestamp',
        'trigger',
      ].sort(),
    );
    expect(Object.keys(doc.state_snapshot as object).sort()).toEqual(
      [
        'active_lessons',
        'circuit_breaker_state',
        'cost_accumulated',
        'current_phase_state',
        'errors_encountered',
        'gate_history',
        'health_history',
        'phase_outputs',
      ].sort(),
    );
    expect(Object.keys((doc.state_snapshot as { phase_outputs: object }).phase_outputs)).toEqual([...PHASE_KEYS].sort());
    expect(Object.keys(doc.context_fields as object).sort()).toEqual(['api_metrics', 'fallback_flags', 'iteration_counts', 'warnings']);
  });

  it('refuses ids that are not UUID v4, unknown triggers and malformed phases', async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 4 });
    for (const bad of [
      { ...draft!, id: 'cp_20250101T000000000Z_abcdefghij' },
      { ...draft!, runId: 'run-1' },
      { ...draft!, source: 'step_boundary' },
      { ...draft!, status: 'timeout' },
      { ...draft!, payload: { ...draft!.payload, phase: 'phase_9_deploy' } },
      { ...draft!, payload: { ...draft!.payload, phase: 'phase_3' } },
      { ...draft!, sequence: 0 },
    ]) {
      await expect(phasedWorkflow.document.encode(bad)).rejects.toMatchObject({ reasonCode: 'checkpoint_schema_invalid' });
    }
    expect(() => phasedWorkflow.assertRunId('run-1')).toThrow(/checkpoint_key_invalid/);
    expect(() => phasedWorkflow.assertRunId(newUuidV4())).not.toThrow();
    const loose = createPhasedWorkflowProfile({ uuidRunIds: false });
    expect(() => loose.assertRunId('run-1')).not.toThrow();
    expect(() => loose.assertRunId('../x')).toThrow(/checkpoint_key_invalid/);
    await expect(loose.document.encode({ ...draft!, runId: 'run-1' })).resolves.toBeDefined();
  });

  it('phaseNames restrict the phase field to the named phases', async () => {
    const named = createPhasedWorkflowProfile({ phaseNames: { phase_0: 'intake', phase_0_5: 'triage', phase_1: 'plan' } });
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 9 });
    const at = (phase: string) => ({ ...draft!, payload: { ...draft!.payload, phase } });
    await expect(named.document.encode(at('phase_0_5_triage'))).resolves.toBeDefined();
    await expect(named.document.encode(at('phase_1_build'))).rejects.toMatchObject({ reasonCode: 'checkpoint_schema_invalid' });
    expect(validateSync(named.payload, at('phase_1_plan').payload).issues).toBeUndefined();
    expect(validateSync(named.payload, at('phase_2_build').payload).issues).toBeDefined();
    expect(() => createPhasedWorkflowProfile({ phaseNames: { phase_1: '1st' } })).toThrow(/checkpoint_config_invalid/);
  });
});

describe('phasedWorkflow profile rules', () => {
  it('declares the nine triggers with the spec priorities, no heartbeat, UUID ids and the spec statuses', () => {
    expect(Object.keys(phasedWorkflow.triggers).sort()).toEqual([...TRIGGERS].sort());
    expect(phasedWorkflow.trigger('circuit_breaker').priority).toBe('critical');
    for (const t of ['phase_complete', 'gate_decision', 'escalation', 'cost_threshold', 'destructive_op', 'manual'])
      expect(phasedWorkflow.trigger(t).priority).toBe('high');
    for (const t of ['iteration', 'expensive_op']) expect(phasedWorkflow.trigger(t).priority).toBe('medium');
    expect(phasedWorkflow.heartbeat).toBe(false);
    expect(phasedWorkflow.retention).toBe(phasedWorkflowRetention);
    expect(phasedWorkflow.resume).toBe(phasedWorkflowResumeRule);
    expect(phasedWorkflow.newSnapshotId({ runId: 'r', sequence: 1, source: 'manual', createdAtMs: 0 })).toMatch(/^[0-9a-f-]{36}$/);
    expect(phasedWorkflow.statuses.all).toEqual(['in_progress', 'paused', 'completed', 'failed']);
    expect(phasedWorkflow.isTerminal('completed') && phasedWorkflow.isTerminal('failed')).toBe(true);
    expect(phasedWorkflow.isTerminal('paused')).toBe(false);
    expect(phasedWorkflow.maxSnapshotBytes).toBe(10 * 1024 * 1024);
    expect(phasedWorkflow.onOversize).toBe('split');
    // the profile hands the writer its phase-first splitter; other profiles keep the generic one
    expect(phasedWorkflow.splitDocument).toBe(splitPhasedWorkflowDocument);
    expect(createPhasedWorkflowProfile({ uuidRunIds: false }).splitDocument).toBe(splitPhasedWorkflowDocument);
    expect(snapshotLifecycle.splitDocument).toBe(splitDocument);
  });

  it('lays out the spec storage_structure', () => {
    const { layout } = phasedWorkflow;
    const run = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
    const key = layout.historyKey!({ runId: run, id: newUuidV4(), sequence: 3, source: 'circuit_breaker' });
    expect(key).toBe(`checkpoints/${run}/cp_003_circuit_breaker.json`);
    expect(layout.classify(key)).toEqual({ kind: 'history', runId: run, sequence: 3, source: 'circuit_breaker', compressed: false });
    expect(layout.classify(`${key}.gz`)).toMatchObject({ kind: 'history', sequence: 3, compressed: true });
    expect(layout.historyKey!({ runId: run, id: 'x', sequence: 1234, source: 'manual' })).toBe(`checkpoints/${run}/cp_1234_manual.json`);
    expect(layout.latestKey(run)).toBe(`checkpoints/${run}/latest.json`);
    expect(layout.indexKey!(run)).toBe(`checkpoints/${run}/index.json`);
    expect(layout.preservedRunsKey).toBe('checkpoints/preserved_runs.json');
    expect(layout.retentionLogKey).toBe('checkpoints/retention_log.json');
    expect(layout.batchKey!(run, 4, 9)).toBe(`checkpoints/${run}/batch_4_9.json`);
    expect(layout.classify(layout.batchKey!(run, 4, 9))).toMatchObject({ kind: 'batch', runId: run, sequence: 4 });
    expect(layout.summaryKey!(run)).toBe(`checkpoints/${run}/summary.json`);
    for (const k of [layout.latestKey(run), layout.indexKey!(run), layout.summaryKey!(run)]) expect(layout.classify(k)?.kind).toBeDefined();
    expect(layout.classify('checkpoints/preserved_runs.json')?.kind).toBe('preserved_runs');
    expect(layout.classify('checkpoints/retention_log.json')?.kind).toBe('retention_log');
  });

  it('the spec index_schema fixture is a valid run index', () => {
    const index = decodeRunIndex(utf8Encode(fixture('phased-workflow.index.json')));
    expect(index.checkpoint_count).toBe(4);
    for (const e of index.checkpoints)
      expect(phasedWorkflow.layout.classify(e.file_path)).toMatchObject({ kind: 'history', sequence: e.sequence, source: e.trigger });
  });

  it('api_metrics are not material state; everything else is', () => {
    const [p] = fc.sample(phasedPayloadArb, { numRuns: 1, seed: 1 });
    const view = (x: PhasedWorkflowPayload): string => canonicalJson(phasedWorkflow.materialView(x));
    expect(view({ ...p!, context_fields: { ...p!.context_fields, api_metrics: { github: { calls: 99 } } } })).toBe(view(p!));
    expect(view({ ...p!, state_snapshot: { ...p!.state_snapshot, cost_accumulated: p!.state_snapshot.cost_accumulated + 1 } })).not.toBe(
      view(p!),
    );
    expect(view({ ...p!, context_fields: { ...p!.context_fields, warnings: [...p!.context_fields.warnings, 'w'] } })).not.toBe(view(p!));
  });
});

describe('phases and trigger helpers', () => {
  const [base] = fc.sample(phasedPayloadArb, { numRuns: 1, seed: 21 });

  it('initialPhasedPayload: the spec-valid state of a run entering its first phase, accepted by the writer', async () => {
    const payload = initialPhasedPayload('phase_0_intake', '2026-01-15T14:00:00.000Z');
    expect(PhasedWorkflowPayloadSchema.parse(payload)).toEqual(payload);
    expect(payload.state_snapshot.current_phase_state).toEqual({
      phase: 'phase_0_intake',
      started_at: '2026-01-15T14:00:00.000Z',
      progress: {},
      partial_output: null,
    });
    expect(completedPhaseKeys(payload.state_snapshot.phase_outputs)).toEqual([]);
    expect(payload.state_snapshot.cost_accumulated).toBe(0);
    // Each call gives fresh objects: filling one run's state never leaks into another's.
    const other = initialPhasedPayload('phase_0_intake', '2026-01-15T14:00:00.000Z');
    other.state_snapshot.gate_history.push({ gate_id: 'g', decision: 'pass', score: 1, iteration: 1 });
    other.state_snapshot.phase_outputs.phase_0 = { done: true };
    expect(payload.state_snapshot.gate_history).toEqual([]);
    expect(payload.state_snapshot.phase_outputs.phase_0).toBeNull();

    const storage = memoryStorage();
    const runId = newUuidV4();
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false, failMode: 'throw' });
    const written = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    await writer.close();
    expect(written.ok && written.snapshot.payload).toEqual(payload);

    for (const bad of ['intake', 'phase_9_x', 'phase_1_2x', '']) {
      expect(() => initialPhasedPayload(bad, '2026-01-15T14:00:00.000Z')).toThrow(/checkpoint_schema_invalid/);
    }
  });

  it('a critical circuit_breaker with unchanged state is never coalesced into the previous expensive_op: resume goes to human_review (regression)', async () => {
    const payload = initialPhasedPayload('phase_1_research', '2026-01-15T14:00:00.000Z');
    const storage = memoryStorage();
    const runId = newUuidV4();
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false, failMode: 'throw' });
    const first = await writer.checkpoint(phasedTriggers.at('expensive_op', payload));
    const tripped = await writer.checkpoint(phasedTriggers.at('circuit_breaker', payload, 'in_progress'));
    await writer.close();
    expect(first.ok && first.outcome).toBe('written');
    expect(tripped.ok && tripped.outcome).toBe('written');
    const latest = tripped.ok ? tripped.snapshot : undefined;
    expect(latest?.source).toBe('circuit_breaker');
    expect(latest?.priority).toBe('critical');
    expect(phasedWorkflow.resume!(latest!, { now: 0 })).toMatchObject({ at: 'human_review', eligible: false });
    // Non-critical triggers with unchanged state still coalesce inside the window.
    const again = createWriter({ storage, profile: phasedWorkflow, runId: newUuidV4(), heartbeatIntervalMs: false, failMode: 'throw' });
    await again.checkpoint(phasedTriggers.at('expensive_op', payload));
    const folded = await again.checkpoint(phasedTriggers.at('iteration', payload));
    await again.close();
    expect(folded.ok && folded.outcome).toBe('coalesced');
  });

  it('phase ids parse and order', () => {
    expect(phaseId('phase_0_5', 'triage')).toBe('phase_0_5_triage');
    expect(parsePhase('phase_0_5_triage')).toEqual({ key: 'phase_0_5', number: 0.5, name: 'triage' });
    expect(parsePhase('phase_0_intake')).toEqual({ key: 'phase_0', number: 0, name: 'intake' });
    expect(parsePhase('phase_9_x')).toBeUndefined();
    expect(nextPhaseKey('phase_0')).toBe('phase_0_5');
    expect(nextPhaseKey('phase_0_5')).toBe('phase_1');
    expect(nextPhaseKey('phase_8')).toBeUndefined();
    expect(() => phaseId('phase_1', '2x')).toThrow(/checkpoint_schema_invalid/);
    const outputs = { ...emptyPhaseOutputs(), phase_0: {}, phase_1: { a: 1 } };
    expect(completedPhaseKeys(outputs)).toEqual(['phase_0', 'phase_1']);
  });

  it('build requests with the spec priorities and contents', () => {
    const done = phasedTriggers.phaseComplete(base!, 'phase_3', { built: true });
    expect(done).toMatchObject({ source: 'phase_complete', priority: 'high', status: 'in_progress' });
    expect(done.payload.state_snapshot.phase_outputs.phase_3).toEqual({ built: true });
    const gate = phasedTriggers.gateDecision(done.payload, { gate_id: 'gate_3', decision: 'iterate', score: 0.5, iteration: 2 });
    expect(gate.payload.state_snapshot.gate_history.at(-1)).toEqual({ gate_id: 'gate_3', decision: 'iterate', score: 0.5, iteration: 2 });
    expect(gate.payload.context_fields.iteration_counts.gate_3).toBe(2);
    const trip = phasedTriggers.circuitBreakerTrip(gate.payload, 'github_api', { state: 'open', failures: 5 });
    expect(trip).toMatchObject({ source: 'circuit_breaker', priority: 'critical', status: 'paused' });
    expect(trip.payload.state_snapshot.circuit_breaker_state.github_api).toEqual({ state: 'open', failures: 5 });
    expect(phasedTriggers.at('destructive_op', base!)).toMatchObject({ source: 'destructive_op', priority: 'high' });
    expect(base!.state_snapshot.phase_outputs.phase_3).not.toEqual({ built: true }); // the input is not modified
    for (const r of [done, gate, trip]) expect(validateSync(phasedWorkflow.payload, r.payload).issues).toBeUndefined();
  });

  it('the cost-threshold trigger fires exactly once, at 80% of the budget', () => {
    const cost = createCostThresholdTrigger({ budgetUsd: 10 });
    const at = (usd: number) => ({ ...base!, state_snapshot: { ...base!.state_snapshot, cost_accumulated: usd } });
    expect(cost.thresholdUsd).toBe(8);
    expect(cost.check(at(7.99))).toBeUndefined();
    expect(cost.fired).toBe(false);
    expect(cost.check(at(8))).toMatchObject({ source: 'cost_threshold', priority: 'high', status: 'in_progress' });
    expect(cost.fired).toBe(true);
    expect(cost.check(at(9))).toBeUndefined();
    expect(cost.check(at(20))).toBeUndefined();
    expect(createCostThresholdTrigger({ budgetUsd: 10, fired: true }).check(at(9))).toBeUndefined();
    expect(createCostThresholdTrigger({ budgetUsd: 10, threshold: 0.5 }).check(at(5))).toBeDefined();
    expect(() => createCostThresholdTrigger({ budgetUsd: 0 })).toThrow(/checkpoint_config_invalid/);
  });

  it('summarizes a run with the spec summary_schema', () => {
    const last = {
      id: newUuidV4(),
      runId: newUuidV4(),
      sequence: 9,
      createdAt: '2025-12-05T12:00:00.000Z',
      source: 'phase_complete',
      sourceDetails: [],
      status: 'completed',
      payload: {
        ...base!,
        state_snapshot: {
          ...base!.state_snapshot,
          phase_outputs: { ...emptyPhaseOutputs(), phase_0: {}, phase_0_5: {} },
          cost_accumulated: 4.5,
          errors_encountered: ['x'],
        },
      },
      integrity: { format_version: '1.0', algorithm: 'sha256' as const, checksum: '0'.repeat(64) },
    };
    const summary = phasedRunSummary({ createdAt: '2025-12-05T10:00:00.000Z' }, last);
    expect(summary).toEqual({
      run_id: last.runId,
      started_at: '2025-12-05T10:00:00.000Z',
      completed_at: '2025-12-05T12:00:00.000Z',
      phases_completed: 2,
      final_status: 'completed',
      total_cost_usd: 4.5,
      errors_count: 1,
    });
    expect(PhasedRunSummarySchema.safeParse(summary).success).toBe(true);
  });
});

describe('size management (over 10 MB)', () => {
  it('moves phase_outputs entries to part files first, and readSnapshot reassembles the exact checkpoint from memory storage', async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 13 });
    const big = (mb: number, tag: string) => ({ tag, blob: 'x'.repeat(mb * 1024 * 1024) });
    const payload: PhasedWorkflowPayload = {
      ...draft!.payload,
      state_snapshot: {
        ...draft!.payload.state_snapshot,
        phase_outputs: { ...emptyPhaseOutputs(), phase_1: big(2, 'one'), phase_2: big(3, 'two'), phase_4: { small: true } },
        // a larger non-phase array: the generic largest-first splitter would move this instead
        errors_encountered: Array.from({ length: 6 * 1024 }, (_, i) => ({ i, detail: 'e'.repeat(1000) })),
      },
    };
    const encoded = await phasedWorkflow.document.encode({ ...draft!, payload });
    expect(encoded.bytes.length).toBeGreaterThan(10 * 1024 * 1024);
    const doc = parseJson(utf8Decode(encoded.bytes)) as JsonObject;
    const ref = { runId: draft!.runId, id: draft!.id, sequence: draft!.sequence, source: draft!.source };
    const { main, parts } = await splitPhasedWorkflowDocument(doc, phasedWorkflow.maxSnapshotBytes, (n) =>
      phasedWorkflow.layout.partKey!(ref, `${n}.json`),
    );
    const mainBytes = utf8Encode(canonicalJson(main));
    expect(mainBytes.length).toBeLessThanOrEqual(10 * 1024 * 1024);
    const outputs = (main.state_snapshot as JsonObject).phase_outputs as JsonObject;
    // the largest phase output went first, and that was enough
    expect(Object.keys(outputs.phase_2 as JsonObject)).toEqual([PART_MARKER]);
    expect(outputs.phase_1).toEqual(payload.state_snapshot.phase_outputs.phase_1);
    expect(outputs.phase_4).toEqual({ small: true });
    expect(parts).toHaveLength(1);
    // what the generic splitter alone would have done: move the larger errors array
    const generic = await splitDocument(doc, phasedWorkflow.maxSnapshotBytes, (n) => `g/${n}.json`);
    expect(Object.keys((generic.main.state_snapshot as JsonObject).errors_encountered as JsonObject)).toEqual([PART_MARKER]);
    expect(Array.isArray((main.state_snapshot as JsonObject).errors_encountered)).toBe(true);
    expect((main.state_snapshot as JsonObject).cost_accumulated).toBe(payload.state_snapshot.cost_accumulated);

    const storage = memoryStorage();
    for (const p of parts) await storage.put(p.key, p.data, { ifAbsent: true });
    const key = phasedWorkflow.layout.historyKey!(ref);
    await storage.put(key, mainBytes);
    const back = await readSnapshot(storage, phasedWorkflow, key);
    expect(back).toEqual(encoded.snapshot);
    for (const p of parts)
      expect(phasedWorkflow.layout.classify(p.key)).toMatchObject({ kind: 'part', runId: draft!.runId, sequence: draft!.sequence });
    // a part that does not match its reference is an integrity error
    await storage.put(parts[0]!.key, utf8Encode('{"tag":"tampered"}'));
    await expect(readSnapshot(storage, phasedWorkflow, key)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('an oversized phase output made of many small items is cut into a few chunk parts (core splitDocument fix)', async () => {
    const [draft] = fc.sample(draftArb, { numRuns: 1, seed: 14 });
    const log = Array.from({ length: 1200 }, (_, i) => `line ${i} `.padEnd(1024, '.'));
    const payload = {
      ...draft!.payload,
      state_snapshot: { ...draft!.payload.state_snapshot, phase_outputs: { ...emptyPhaseOutputs(), phase_2: { log } } },
    };
    const encoded = await phasedWorkflow.document.encode({ ...draft!, payload });
    const doc = parseJson(utf8Decode(encoded.bytes)) as JsonObject;
    for (const split of [splitPhasedWorkflowDocument, splitDocument]) {
      const { main, parts } = await split(doc, 1024 * 1024, (n) => `p/${n}.json`);
      // two chunks of the array, not one part per line (which took one full pass per line)
      expect(parts).toHaveLength(2);
      expect(utf8Encode(canonicalJson(main)).length).toBeLessThan(64 * 1024);
      const files = new Map(parts.map((p) => [p.key, parseJson(utf8Decode(p.data))]));
      expect(await resolveParts(main, async (k) => files.get(k))).toEqual(doc);
    }
  });

  it('falls back to the generic splitter when phase outputs alone cannot make it fit, and leaves small documents alone', async () => {
    const doc: JsonObject = {
      state_snapshot: {
        phase_outputs: { ...emptyPhaseOutputs(), phase_1: { a: 'y'.repeat(3000) } },
        errors_encountered: Array.from({ length: 40 }, () => 'z'.repeat(300)),
      },
      integrity: { checksum: 'c' },
    };
    const { main, parts } = await splitPhasedWorkflowDocument(doc, 4000, (n) => `p/${n}.json`);
    expect(utf8Encode(canonicalJson(main)).length).toBeLessThanOrEqual(4000);
    expect(parts.map((p) => p.key)).toEqual([...new Set(parts.map((p) => p.key))]);
    // phase_1 went first (part 1); the rest was left to the generic splitter
    expect(parseJson(utf8Decode(parts[0]!.data))).toEqual({ a: 'y'.repeat(3000) });
    const files = new Map(parts.map((p) => [p.key, parseJson(utf8Decode(p.data))]));
    expect(await resolveParts(main, async (k) => files.get(k))).toEqual(doc);
    expect(await splitPhasedWorkflowDocument({ a: 1 }, 4000, (n) => `p/${n}`)).toEqual({ main: { a: 1 }, parts: [] });
  });
});

describe('phased-workflow fixtures', () => {
  const specText = fixture('phased-workflow.spec.json');
  const spec = parseJson(specText) as JsonObject;

  it('a checkpoint shaped like the spec n8n node output imports, validates and keeps every spec field byte for byte', async () => {
    const { bytes, snapshot } = await importPhasedWorkflowDocument(specText);
    const sealed = parseJson(utf8Decode(bytes)) as JsonObject;
    const { integrity, status, source_details, priority, ...specFields } = sealed;
    expect({ status, source_details, priority }).toEqual({ status: 'in_progress', source_details: [], priority: 'high' });
    expect(integrity).toMatchObject({ algorithm: 'sha256' });
    expect(canonicalJson(specFields)).toBe(canonicalJson(spec));
    expect(externalValidator(phasedWorkflow.document.jsonSchema)(sealed)).toEqual([]);
    expect(snapshot).toMatchObject({ id: spec.checkpoint_id, runId: spec.run_id, sequence: 4, source: 'phase_complete', priority: 'high' });
    const sealedFixture = utf8Encode(fixture('phased-workflow.sealed.json').trimEnd());
    expect(utf8Decode(bytes)).toBe(utf8Decode(sealedFixture));
    const decoded = await phasedWorkflow.document.decode(sealedFixture, 'latest.json');
    expect(decoded).toEqual(snapshot);
    expect((await phasedWorkflow.document.encode(decoded)).bytes).toEqual(sealedFixture);
    expect((await importPhasedWorkflowDocument(sealedFixture)).bytes).toEqual(sealedFixture);
    expect((await importPhasedWorkflowDocument(spec, { status: 'paused' })).snapshot.status).toBe('paused');
  });

  it('resumes with the profile rule: after phase_complete at the next phase, restoring the state step_3 lists', async () => {
    const { snapshot } = await importPhasedWorkflowDocument(specText);
    const point = phasedWorkflow.resume!(snapshot, { now: 0, isTerminal: phasedWorkflow.isTerminal });
    expect(point).toMatchObject({
      at: 'phase_3',
      eligible: true,
      reason: 'phase_complete_next_phase',
      completed: ['phase_0', 'phase_0_5', 'phase_1', 'phase_2'],
    });
    expect(point.restored).toMatchObject({
      current_phase: 'phase_2_design',
      cost_accumulated: 3.17,
      active_lessons: ['L-014: verify after every GitHub PUT'],
    });
    expect(point.message).toContain(`RESUME: Continuing run ${String(spec.run_id)} from checkpoint ${String(spec.checkpoint_id)}`);
    const tripped = (await importPhasedWorkflowDocument({ ...spec, trigger: 'circuit_breaker' })).snapshot;
    expect(tripped.priority).toBe('critical');
    expect(phasedWorkflow.resume!(tripped, { now: 0 })).toMatchObject({ at: 'human_review', eligible: false });
  });

  it('refuses what the spec schema refuses', async () => {
    const { trigger: _t, ...noTrigger } = spec;
    for (const bad of [
      noTrigger,
      { ...spec, trigger: 'timer' },
      { ...spec, phase: 'design' },
      { ...spec, state_snapshot: { ...(spec.state_snapshot as JsonObject), cost_accumulated: 'free' } },
    ]) {
      await expect(importPhasedWorkflowDocument(bad)).rejects.toSatisfy((e) => isCheckpointError(e, 'checkpoint_schema_invalid'));
    }
    const sealed = parseJson(fixture('phased-workflow.sealed.json')) as JsonObject;
    await expect(importPhasedWorkflowDocument({ ...sealed, sequence_number: 5 })).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
    await expect(importPhasedWorkflowDocument({ ...sealed, run_id: 'not-a-uuid' }, { reseal: true })).rejects.toMatchObject({
      reasonCode: 'checkpoint_schema_invalid',
    });
  });
});
