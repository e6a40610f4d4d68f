import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, isCheckpointError, listAll, memoryStorage, type JsonValue, type DefaultTrigger } from 'savepoint';
import { decodeRunIndex } from 'savepoint/toolkit';
import { utf8Decode } from '../../src/codec/utf8.js';
import { faultyStorage } from 'savepoint/testing';
import { historyOf, latestOf } from '../support/runs.js';
import { manualClock, T0 } from '../support/clock.js';
import { phasedLike, planLike } from '../support/profiles.js';
import { sequentialMemory } from '../support/storages.js';

const run = 'run-1';

describe('checkpoint(): triggers and validation', () => {
  it('writes snapshots 1, 2, 3 with history, latest and index', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const results = [];
    for (let step = 1; step <= 3; step++) {
      results.push(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step } }));
      await clock.advance(5000);
    }
    expect(results.map((r) => r.ok && r.outcome)).toEqual(['written', 'written', 'written']);
    expect(results.map((r) => r.ok && r.sequence)).toEqual([1, 2, 3]);
    const history = await historyOf(storage, defaultProfile, run);
    expect(history.map((s) => [s.sequence, s.payload])).toEqual([
      [1, { step: 1 }],
      [2, { step: 2 }],
      [3, { step: 3 }],
    ]);
    expect(history[0]!.createdAt).toBe(new Date(T0).toISOString());
    const latest = await latestOf(storage, defaultProfile, run);
    expect(latest).toEqual(history[2]);
    const r3 = results[2]!;
    expect(r3.ok && r3.key).toBe(defaultProfile.layout.historyKey!({ runId: run, id: latest!.id, sequence: 3, source: 'step_boundary' }));
    expect(r3.ok && r3.snapshot).toEqual(latest);
    const index = decodeRunIndex((await storage.get(defaultProfile.layout.indexKey!(run)))!.bytes);
    expect(index.checkpoint_count).toBe(3);
    expect(index.checkpoints.map((e) => [e.sequence, e.trigger, e.status, e.checkpoint_id])).toEqual(
      history.map((s) => [s.sequence, 'step_boundary', 'in_progress', s.id]),
    );
    await w.close();
  });

  it('accepts every trigger the profile declares and refuses unknown ones with checkpoint_schema_invalid', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const errors: string[] = [];
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    w.on('error', (e) => errors.push(e.reasonCode));
    let n = 0;
    for (const source of ['step_boundary', 'error_boundary', 'timer', 'manual'] as const) {
      const r = await w.checkpoint({ source, status: 'in_progress', payload: { n: n++ } });
      expect(r.ok).toBe(true);
    }
    for (const source of ['phase_complete', 'toString', '__proto__', '']) {
      // Not one of the profile's trigger names, so not a compile-time DefaultTrigger either: checked at run time too.
      const r = await w.checkpoint({ source: source as DefaultTrigger, status: 'in_progress', payload: { n: n++ } });
      expect(r.ok).toBe(false);
      expect(!r.ok && r.reasonCode).toBe('checkpoint_schema_invalid');
    }
    expect(errors).toEqual(Array(4).fill('checkpoint_schema_invalid'));
    expect((await historyOf(storage, defaultProfile, run)).length).toBe(4);
    expect(w.lastSequence).toBe(4);
  });

  it('rejects an unknown status and an invalid payload with the JSON path, never the value', async () => {
    const storage = memoryStorage();
    const w = createWriter({ storage, profile: phasedLike, runId: run, clock: manualClock() });
    const bad = await w.checkpoint({ source: 'manual', status: 'running', payload: { phase: 'phase_1_x', cost: 1 } });
    expect(!bad.ok && bad.reasonCode).toBe('checkpoint_schema_invalid');
    const r = await w.checkpoint({
      source: 'manual',
      status: 'in_progress',
      payload: { phase: 'phase_1_x', cost: 'SECRET-VALUE' as unknown as number },
    });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_schema_invalid');
    expect(!r.ok && r.error.details.paths).toEqual(['$.cost']);
    expect(!r.ok && JSON.stringify(r.error.toJSON())).not.toContain('SECRET-VALUE');
    const nonJson = createWriter({ storage, profile: defaultProfile, runId: 'r2', clock: manualClock() });
    const c = await nonJson.checkpoint({ source: 'manual', status: 'in_progress', payload: { x: Number.NaN } as unknown as JsonValue });
    expect(!c.ok && c.reasonCode).toBe('checkpoint_schema_invalid');
    expect(await listAll(storage, '')).toEqual([]);
  });

  it('keeps the trigger priority from the spec in the snapshot and the stored document', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: phasedLike, runId: run, clock });
    const expected: Record<string, string | undefined> = {
      circuit_breaker: 'critical',
      phase_complete: 'high',
      iteration: 'medium',
      manual: undefined,
    };
    let cost = 0;
    for (const [source, priority] of Object.entries(expected)) {
      const r = await w.checkpoint({ source, status: 'in_progress', payload: { phase: 'phase_1_plan', cost: cost++ } });
      expect(r.ok && r.snapshot.priority).toBe(priority);
      const doc = JSON.parse(utf8Decode((await storage.get(r.ok ? r.key : ''))!.bytes)) as { priority?: string; trigger: string };
      expect(doc.priority).toBe(priority);
      expect(doc.trigger).toBe(source);
    }
    expect(phasedLike.layout.classify('checkpoints/run-1/cp_001_circuit_breaker.json')?.kind).toBe('history');
    expect(await storage.get('checkpoints/run-1/cp_001_circuit_breaker.json')).toBeDefined();
  });

  it('stores what the payload was at call time, not after the caller mutates it', async () => {
    const storage = memoryStorage();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock: manualClock() });
    const payload = { items: [1, 2] };
    const p = w.checkpoint({ source: 'manual', status: 'in_progress', payload });
    payload.items.push(3);
    const r = await p;
    expect(r.ok && r.snapshot.payload).toEqual({ items: [1, 2] });
    expect((await latestOf(storage, defaultProfile, run))!.payload).toEqual({ items: [1, 2] });
  });

  it('fails with checkpoint_closed after close(), and close is idempotent', async () => {
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock: manualClock() });
    await w.close();
    await w.close();
    const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_closed');
    expect(w.closed).toBe(true);
  });

  it('failMode throw rejects with the CheckpointError instead', async () => {
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock: manualClock(), failMode: 'throw' });
    // @ts-expect-error an unknown trigger is a compile error, and a run-time one for untyped callers
    await expect(w.checkpoint({ source: 'nope', status: 'in_progress', payload: 1 })).rejects.toSatisfy((e) =>
      isCheckpointError(e, 'checkpoint_schema_invalid'),
    );
    const ok = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(ok.ok).toBe(true);
  });

  it('refuses bad options with checkpoint_config_invalid and bad run ids with checkpoint_key_invalid', () => {
    const storage = memoryStorage();
    expect(() => createWriter({ storage, profile: defaultProfile, runId: '../x' })).toThrow(/checkpoint_key_invalid/);
    expect(() => createWriter({ storage, profile: defaultProfile, runId: run, maxQueue: 0 })).toThrow(/checkpoint_config_invalid/);
    expect(() => createWriter({ storage, profile: defaultProfile, runId: run, failMode: 'loud' as 'throw' })).toThrow(
      /checkpoint_config_invalid/,
    );
    expect(() => createWriter({ storage, profile: phasedLike, runId: run, heartbeatIntervalMs: 1000 })).toThrow(
      /checkpoint_config_invalid/,
    );
    for (const name of ['dedup', 'autoRetention', 'openFromLatest'])
      expect(() => createWriter({ storage, profile: defaultProfile, runId: run, [name]: 'yes' }), name).toThrow(
        `${name} must be a boolean`,
      );
  });
});

describe('write order', () => {
  it('history (create-only) → latest (replace) → index (conditional) on an adapter without atomic batch', async () => {
    const inner = memoryStorage();
    const storage = faultyStorage(sequentialMemory(inner), { count: 'writes' });
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    await clock.advance(4000);
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    const writes = storage.log
      .filter((r) => r.operation !== 'get' && r.operation !== 'list')
      .map((r) => `${r.operation} ${r.keys[0]!.replace(/cp_\w+/, 'ID')}`);
    expect(writes).toEqual([
      'put checkpoints/run-1/history/ID.json',
      'put checkpoints/run-1/latest.json',
      'put checkpoints/run-1/index.json',
      'put checkpoints/run-1/history/ID.json',
      'put checkpoints/run-1/latest.json',
      'put checkpoints/run-1/index.json',
    ]);
  });

  it('uses one batch() when the adapter declares atomicBatch', async () => {
    const storage = faultyStorage(memoryStorage(), { count: 'writes' });
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock: manualClock() });
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    const writes = storage.log.filter((r) => r.operation === 'batch' || r.operation === 'put');
    expect(writes.length).toBe(1);
    expect(writes[0]!.operation).toBe('batch');
    expect(writes[0]!.keys.map((k) => k.replace(/cp_\w+/, 'ID'))).toEqual([
      'checkpoints/run-1/history/ID.json',
      'checkpoints/run-1/latest.json',
      'checkpoints/run-1/index.json',
    ]);
  });

  it('a profile without history writes latest only; without an index it skips the index', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: planLike, runId: '02', clock });
    for (let i = 0; i < 3; i++) {
      const r = await w.checkpoint({ source: 'task_complete', status: 'in_progress', payload: { current_task_index: i } });
      expect(r.ok && [r.outcome, r.sequence, r.key]).toEqual(['written', i + 1, 'plans/02-CHECKPOINT.json']);
      await clock.advance(10_000);
    }
    expect((await listAll(storage, '')).map((e) => e.key)).toEqual(['plans/02-CHECKPOINT.json']);
    const w2 = createWriter({ storage, profile: planLike, runId: '02', clock });
    const r = await w2.checkpoint({ source: 'task_complete', status: 'completed', payload: { current_task_index: 3 } });
    expect(r.ok && r.sequence).toBe(4);
  });
});
