import { describe, expect, it } from 'vitest';
import { createWriter, isCheckpointError, memoryStorage, parseJson, planResume, type JsonObject, type StorageAdapter } from 'savepoint';
import { decodeStoredSnapshotTolerant, decodeTolerant } from 'savepoint/toolkit';
import { fsStorage } from 'savepoint/fs';
import { importPlanExecutorDocument, importPlanExecutorRun, planExecutor } from 'savepoint/plan-executor';
import { importSnapshotLifecycleDocument, importSnapshotLifecycleRun, snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { importPhasedWorkflowDocument, importPhasedWorkflowRun, phasedWorkflow } from 'savepoint/phased-workflow';
import { runCli } from '../../../src/cli/run.js';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { foreignFixture, PHASED_RUN, putFixtures, tempDirs } from '../../support/foreign.js';
import { captureIo } from '../../support/cli-io.js';

const tempDir = tempDirs('savepoint-import-');
const asJson = (bytes: Uint8Array): JsonObject => parseJson(utf8Decode(bytes)) as JsonObject;
const snapshotOf = async (
  storage: StorageAdapter,
  key: string,
  profile: typeof snapshotLifecycle | typeof phasedWorkflow | typeof planExecutor,
) => decodeStoredSnapshotTolerant(storage, profile as never, key, (await storage.get(key))!.bytes);

const LIFECYCLE_RUN = 'sess-2026-01-15-a';
const lifecycleFiles = {
  [`checkpoints/${LIFECYCLE_RUN}/latest.json`]: 'latest.spec.json',
  [`checkpoints/${LIFECYCLE_RUN}/history/cp_20260115143000_7f3e9a.json`]: 'latest.spec.json',
  [`checkpoints/${LIFECYCLE_RUN}/history/cp_1768487100_a1b2.json`]: 'history.older-unsealed.json',
};
const phasedFiles = {
  [`checkpoints/${PHASED_RUN}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
  [`checkpoints/${PHASED_RUN}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
  [`checkpoints/${PHASED_RUN}/latest.json`]: 'latest.json',
};

describe('import…Document accepts what real tools produce', () => {
  it('each fixture is sealed as it is: vendor fields, offsets and ids kept; the result reads without warnings; importing it again is the identity', async () => {
    const cases = [
      [importSnapshotLifecycleDocument, snapshotLifecycle, 'snapshot-lifecycle', 'history.older-unsealed.json', 'vendor'],
      [importSnapshotLifecycleDocument, snapshotLifecycle, 'snapshot-lifecycle', 'latest.spec.json', 'created_at'],
      [importPhasedWorkflowDocument, phasedWorkflow, 'phased-workflow', 'cp_003_expensive_op.variant.json', 'n8n_execution_id'],
      [importPhasedWorkflowDocument, phasedWorkflow, 'phased-workflow', 'cp_1_phase_complete.json', 'checkpoint_id'],
      [importPlanExecutorDocument, planExecutor, 'plan-executor', '02-CHECKPOINT.vendor.json', 'executor'],
      [importPlanExecutorDocument, planExecutor, 'plan-executor', '02-CHECKPOINT.spec-example.json', 'plan_number'],
    ] as const;
    for (const [importDocument, profile, dir, name, member] of cases) {
      const text = foreignFixture(dir, name);
      const imported = await (importDocument as (input: unknown) => Promise<{ bytes: Uint8Array }>)(text);
      expect(asJson(imported.bytes)[member], name).toEqual((parseJson(text) as JsonObject)[member]);
      const read = await decodeStoredSnapshotTolerant(memoryStorage(), profile as never, name, imported.bytes);
      expect(read.warnings, name).toEqual([]);
      expect((await (importDocument as (input: unknown) => Promise<{ bytes: Uint8Array }>)(imported.bytes)).bytes, name).toEqual(
        imported.bytes,
      );
    }
  });
});

describe('whole-run import', () => {
  it('phasedWorkflow in place: dry run writes nothing, --apply seals every n8n file (names and fields kept), a second run changes nothing', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'phased-workflow', phasedFiles);
    const dry = await importPhasedWorkflowRun(storage, PHASED_RUN);
    expect(dry).toMatchObject({ applied: false, changes: 3 });
    expect(utf8Decode((await storage.get(`checkpoints/${PHASED_RUN}/latest.json`))!.bytes)).toBe(
      foreignFixture('phased-workflow', 'latest.json'),
    );

    const applied = await importPhasedWorkflowRun(storage, PHASED_RUN, { apply: true });
    expect(applied.files.map((f) => [f.action, f.warnings])).toEqual([
      ['seal', ['checkpoint_unsealed']],
      ['seal', ['checkpoint_unsealed']],
      ['seal', ['checkpoint_unsealed']],
    ]);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN });
    expect(plan.warnings.map((w) => w.code)).not.toContain('checkpoint_unsealed');
    expect(plan.snapshot.sequence).toBe(2);
    const cp1 = asJson((await storage.get(`checkpoints/${PHASED_RUN}/cp_1_phase_complete.json`))!.bytes);
    expect(cp1).toMatchObject({
      ...(parseJson(foreignFixture('phased-workflow', 'cp_1_phase_complete.json')) as JsonObject),
      status: 'in_progress',
      source_details: [],
    });
    expect((await importPhasedWorkflowRun(storage, PHASED_RUN, { apply: true })).changes).toBe(0);
  });

  it('snapshotLifecycle into another store: the source is only read, the copy is sealed, again changes nothing; a tampered sealed file is skipped, never resealed', async () => {
    const source = memoryStorage();
    const target = memoryStorage();
    await putFixtures(source, 'snapshot-lifecycle', lifecycleFiles);
    const report = await importSnapshotLifecycleRun(source, LIFECYCLE_RUN, { apply: true, target });
    expect(report.changes).toBe(3);
    for (const [key, name] of Object.entries(lifecycleFiles)) {
      expect(utf8Decode((await source.get(key))!.bytes)).toBe(foreignFixture('snapshot-lifecycle', name));
      expect((await snapshotOf(target, key, snapshotLifecycle)).warnings).toEqual([]);
    }
    const older = asJson((await target.get(`checkpoints/${LIFECYCLE_RUN}/history/cp_1768487100_a1b2.json`))!.bytes);
    expect(older).toMatchObject({
      vendor: { host: 'ci-7' },
      created_at: '2026-01-15T15:25:00.123456+01:00',
      sequence: 1, // the run's order of time: it is older than cp_20260115143000_7f3e9a, sealed as 2
    });
    expect(asJson((await target.get(`checkpoints/${LIFECYCLE_RUN}/latest.json`))!.bytes).sequence).toBe(2);
    expect((await importSnapshotLifecycleRun(source, LIFECYCLE_RUN, { apply: true, target })).changes).toBe(0);
    expect((await planResume({ storage: target, profile: snapshotLifecycle, runId: LIFECYCLE_RUN })).snapshot.id).toBe(
      'cp_20260115143000_7f3e9a',
    );

    // One byte of a sealed history file changes: the next import reports it and leaves it alone.
    const key = `checkpoints/${LIFECYCLE_RUN}/history/cp_1768487100_a1b2.json`;
    const tampered = utf8Decode((await target.get(key))!.bytes).replace('"ci-7"', '"ci-8"');
    await target.put(key, utf8Encode(tampered));
    const again = await importSnapshotLifecycleRun(target, LIFECYCLE_RUN, { apply: true });
    expect(again.files.find((f) => f.key === key)).toMatchObject({ action: 'skip', reasonCode: 'checkpoint_integrity_mismatch' });
    expect(utf8Decode((await target.get(key))!.bytes)).toBe(tampered);
  });

  it('planExecutor: a file edited after savepoint sealed it is the newest truth and is sealed again, bookkeeping kept', async () => {
    const storage = memoryStorage();
    const key = 'plans/02-CHECKPOINT.json';
    await putFixtures(storage, 'plan-executor', { [key]: '02-CHECKPOINT.spec-example.json' });
    const writer = createWriter({ storage, profile: planExecutor, runId: '02', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    const plan = await planResume({ storage, profile: planExecutor, runId: '02' });
    expect((await writer.checkpoint({ source: 'task_complete', status: 'in_progress', payload: plan.payload as never })).ok).toBe(true);
    await writer.close();
    const sealed = asJson((await storage.get(key))!.bytes);
    await storage.put(key, utf8Encode(JSON.stringify({ ...sealed, current_task: 'edited by the executor', agent: 'other' })));
    const report = await importPlanExecutorRun(storage, '02', { apply: true });
    expect(report.files).toEqual([{ key, action: 'seal', targetKey: key, warnings: ['checkpoint_integrity_mismatch'] }]);
    const after = await snapshotOf(storage, key, planExecutor);
    expect(after.warnings).toEqual([]);
    expect(after.snapshot).toMatchObject({ sequence: 4, payload: { current_task: 'edited by the executor' } });
    expect(asJson((await storage.get(key))!.bytes).agent).toBe('other');
    expect((await importPlanExecutorRun(storage, '02', { apply: true })).changes).toBe(0);
  });
});

const io = captureIo;

describe('savepoint import', () => {
  it('dry run by default, --apply seals in place, a second run changes nothing; --to-dir copies', async () => {
    const dir = tempDir();
    const storage = fsStorage({ dir });
    await putFixtures(storage, 'phased-workflow', phasedFiles);
    await storage.close();
    const cli = async (...args: string[]) => {
      const out = io();
      const code = await runCli(['import', '--json', '--profile', 'phasedWorkflow', '--dir', dir, ...args], out);
      return { code, json: JSON.parse(out.out) as { applied: boolean; changes: number } };
    };
    expect(await cli()).toMatchObject({ code: 0, json: { applied: false, changes: 3 } });
    const copy = tempDir();
    expect(await cli('--apply', '--to-dir', copy)).toMatchObject({ code: 0, json: { applied: true, changes: 3 } });
    expect(await cli('--apply', '--to-dir', copy)).toMatchObject({ code: 0, json: { changes: 0 } });
    expect(await cli('--apply')).toMatchObject({ code: 0, json: { applied: true, changes: 3 } });
    expect(await cli('--apply')).toMatchObject({ code: 0, json: { changes: 0 } });
    const verify = io();
    expect(await runCli(['verify', '--json', '--profile', 'phasedWorkflow', '--dir', dir], verify)).toBe(0);
    expect((JSON.parse(verify.out) as { findings: unknown[] }).findings).toEqual([]);
  });
});

describe('argument checks of the tolerant read and run import entries', () => {
  it('answers bad arguments with checkpoint_config_invalid / checkpoint_key_invalid, never a raw TypeError', async () => {
    const bad: [string, () => Promise<unknown>][] = [
      ['decodeTolerant format', () => decodeTolerant(null as never, new Uint8Array(), 'x')],
      ['decodeTolerant bytes', () => decodeTolerant(planExecutor.document, 'text' as never, 'x')],
      ['decodeStoredSnapshotTolerant storage', () => decodeStoredSnapshotTolerant({} as never, planExecutor, 'k', new Uint8Array())],
      ['importPlanExecutorRun storage', () => importPlanExecutorRun(undefined as never, '02')],
      ['importPhasedWorkflowRun run id', () => importPhasedWorkflowRun(memoryStorage(), '../x')],
      ['importSnapshotLifecycleRun target', () => importSnapshotLifecycleRun(memoryStorage(), 'run', { target: 42 as never })],
    ];
    for (const [what, call] of bad) await expect(call(), what).rejects.toSatisfy((e: unknown) => isCheckpointError(e));
    await expect(importPlanExecutorRun(memoryStorage(), '02')).rejects.toSatisfy((e: unknown) =>
      isCheckpointError(e, 'checkpoint_not_found'),
    );
  });
});
