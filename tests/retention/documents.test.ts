import { readFileSync } from 'node:fs';
import Ajv2020Module from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  applyRetention,
  defaultProfile,
  keepDaily,
  keepLast,
  keepRunTiers,
  memoryStorage,
  planRetention,
  preserveRun,
  unpreserveRun,
  type Clock,
  type RetentionPolicy,
  type Snapshot,
} from 'savepoint';
import {
  buildInventory,
  buildRetentionSummary,
  describeRetentionRule,
  formatRetentionDuration,
  genericRetentionSummarizer,
  parseRetentionDuration,
  preservedRunsJsonSchema,
  resolveRetentionPolicy,
  retentionLogJsonSchema,
  retentionPolicyJsonSchema,
  retentionSummaryJsonSchema,
} from 'savepoint/toolkit';
import { decodePreservedRuns, encodePreservedRuns, preservedRunIds } from '../../src/retention/preserved-runs.js';
import { decodeRetentionLog } from '../../src/retention/log.js';
import { decodeRetentionSummary } from '../../src/retention/summary.js';
import {
  createPhasedWorkflowRetention,
  phasedWorkflowRetention,
  phasedWorkflowSummarizer,
  summarizePhasedPayload,
} from 'savepoint/phased-workflow';
import { createSnapshotLifecycleRetention, snapshotLifecycleRetention } from 'savepoint/snapshot-lifecycle';
import { preservedRunsCanonicalJsonSchema } from '../../src/retention/preserved-runs.js';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';
import { DAY, writeRun } from '../fixtures/retention/store.js';

const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;
/** An independent validator, as a non-TypeScript tool would use. */
const external = (schema: object): ((doc: unknown) => boolean) => {
  const validate = new Ajv2020({ strict: false, validateFormats: false }).compile(schema);
  return (doc) => validate(doc) as boolean;
};
const NOW = Date.UTC(2025, 5, 15, 12);
const clock: Clock = { now: () => NOW, setTimeout: () => 0, clearTimeout: () => undefined };
const bytes = (v: unknown): Uint8Array => utf8Encode(JSON.stringify(v));

describe('durations and policies', () => {
  it('parses durations and refuses what is not one', () => {
    expect(parseRetentionDuration('14d')).toBe(14 * DAY);
    expect(parseRetentionDuration('24h')).toBe(DAY);
    expect(parseRetentionDuration('1w2d')).toBe(9 * DAY);
    expect(parseRetentionDuration('1d12h30m15s250ms')).toBe(DAY + 12 * 3_600_000 + 30 * 60_000 + 15_000 + 250);
    expect(parseRetentionDuration('1.5h')).toBe(5_400_000);
    expect(parseRetentionDuration(1234)).toBe(1234);
    for (const bad of ['', '14', 'd', '1y', '1 d', '-1d', 'P1D', -1, Number.NaN, Infinity]) {
      expect(() => parseRetentionDuration(bad as never)).toThrow(/checkpoint_config_invalid/);
    }
    expect(formatRetentionDuration(14 * DAY)).toBe('14d');
    expect(formatRetentionDuration(DAY + 5_400_000)).toBe('1d1h30m');
  });

  it('rejects invalid policies with checkpoint_config_invalid, naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ rules: [{ rule: 'keep-last', count: -1 }] }, /rules\.0\.count/],
      [{ rules: [{ rule: 'keep-last', count: 1.5 }] }, /rules\.0\.count/],
      [{ rules: [{ rule: 'keep-within', duration: '2 weeks' }] }, /rules\.0\.duration/],
      [{ rules: [{ rule: 'keep-forever' }] }, /rules\.0/],
      [{ rules: [keepRunTiers({ keepAll: 1, keepFinal: 1 }), keepRunTiers({ keepAll: 2, keepFinal: 1 })] }, /at most one run-tiers/],
      [{ rules: Array.from({ length: 25 }, () => keepLast(1)) }, /rules/],
      [{ rules: [], compressAfter: 'soon' }, /compressAfter/],
      [{ rules: [], extra: true }, /policy is invalid/],
      [{ rules: [], summarizer: 'phased' }, /summarizer/],
    ];
    for (const [policy, message] of cases) {
      expect(() => resolveRetentionPolicy(policy as RetentionPolicy)).toThrow(/checkpoint_config_invalid/);
      expect(() => resolveRetentionPolicy(policy as RetentionPolicy)).toThrow(message);
    }
  });

  it('exports a JSON Schema that accepts the JSON form of the built-in policies', () => {
    const validate = external(retentionPolicyJsonSchema);
    for (const policy of [snapshotLifecycleRetention, phasedWorkflowRetention, { rules: [keepDaily(7, { timeZone: 'Europe/Berlin' })] }]) {
      const { summarizer: _fn, ...data } = policy as RetentionPolicy;
      expect(validate(JSON.parse(JSON.stringify(data)))).toBe(true);
    }
    expect(validate({ rules: [{ rule: 'keep-last', count: 'many' }] })).toBe(false);
  });

  it('the spec defaults, described', () => {
    expect(snapshotLifecycleRetention).toEqual({
      name: 'snapshotLifecycle',
      rules: [
        { rule: 'keep-last', count: 50, maxAge: '14d' },
        { rule: 'keep-latest-status', status: 'failed' },
        { rule: 'keep-latest-status', status: 'completed' },
      ],
      compressAfter: '24h',
    });
    expect(Object.isFrozen(snapshotLifecycleRetention) && Object.isFrozen(snapshotLifecycleRetention.rules)).toBe(true);
    // The spec's tiers: runs 11–50 keep latest.json only, runs 51+ their summary only.
    expect(phasedWorkflowRetention.rules).toEqual([
      { rule: 'run-tiers', keepAll: 10, keepFinal: 40, finalKeeps: 'latest', archiveKeeps: 'summary' },
    ]);
    expect(phasedWorkflowRetention.rules.map(describeRetentionRule)).toEqual([
      'run-tier: 10 newest runs keep all, next 40 keep their latest.json only, older runs are archived to a summary only',
    ]);
    expect(phasedWorkflowRetention.summarizer).toBe(phasedWorkflowSummarizer);
    expect(phasedWorkflowRetention.compressAfter).toBeUndefined();
    expect(snapshotLifecycleRetention.rules.map(describeRetentionRule)).toEqual([
      'keep-last: newest 50 per run (max age 14d)',
      'keep-latest-failed: newest "failed" snapshot per run',
      'keep-latest-completed: newest "completed" snapshot per run',
    ]);
    expect(createSnapshotLifecycleRetention({ keepLast: 10, compressAfter: false }).compressAfter).toBeUndefined();
    expect(createPhasedWorkflowRetention({ keepAll: 3, keepFinal: 7 }).rules).toEqual([
      { rule: 'run-tiers', keepAll: 3, keepFinal: 7, finalKeeps: 'latest', archiveKeeps: 'summary' },
    ]);
    expect(createPhasedWorkflowRetention({ conservative: true }).rules).toEqual([{ rule: 'run-tiers', keepAll: 10, keepFinal: 40 }]);
    expect(() => createPhasedWorkflowRetention({ conservative: 'yes' as unknown as boolean })).toThrow(/conservative must be a boolean/);
  });
});

describe('preserved_runs.json', () => {
  it('accepts every form a person would write and reads the same run ids', () => {
    const forms = [
      ['run-b', 'run-a'],
      [{ run_id: 'run-a', reason: 'lesson' }, 'run-b'],
      { preserved_runs: ['run-a', { run_id: 'run-b' }] },
      { runs: ['run-b', 'run-a', 'run-a'] },
      { run_ids: ['run-a', 'run-b'], note: 'kept for the post-mortem' },
    ];
    const validate = external(preservedRunsJsonSchema);
    for (const form of forms) {
      expect(validate(form)).toBe(true);
      expect(preservedRunIds(decodePreservedRuns(bytes(form)))).toEqual(['run-a', 'run-b']);
    }
    expect(decodePreservedRuns(bytes(forms[1]))).toEqual({ preserved_runs: [{ run_id: 'run-a', reason: 'lesson' }, { run_id: 'run-b' }] });
    expect(decodePreservedRuns(bytes(forms[4]))).toEqual({
      note: 'kept for the post-mortem',
      preserved_runs: [{ run_id: 'run-a' }, { run_id: 'run-b' }],
    });
  });

  it('refuses what is not a list of runs', () => {
    for (const bad of [{}, 'run-a', [1], [''], { runs: 'run-a' }, [{ reason: 'x' }], null]) {
      expect(() => decodePreservedRuns(bytes(bad))).toThrow(/checkpoint_schema_invalid/);
    }
    expect(() => decodePreservedRuns(utf8Encode('[run-a'))).toThrow(/checkpoint_schema_invalid/);
  });

  it('preserveRun writes the canonical form; unpreserveRun removes the entry', async () => {
    const storage = memoryStorage();
    await storage.put('checkpoints/preserved_runs.json', bytes({ runs: ['run-z'], owner: 'ops' }));
    await preserveRun({ storage, profile: defaultProfile, runId: 'run-a', reason: 'interesting failure', clock });
    await preserveRun({ storage, profile: defaultProfile, runId: 'run-a', clock }); // already there: unchanged
    const doc = JSON.parse(utf8Decode((await storage.get('checkpoints/preserved_runs.json'))!.bytes)) as unknown;
    expect(doc).toEqual({
      owner: 'ops',
      preserved_runs: [{ run_id: 'run-a', reason: 'interesting failure', preserved_at: new Date(NOW).toISOString() }, { run_id: 'run-z' }],
    });
    expect(external(preservedRunsCanonicalJsonSchema)(doc)).toBe(true);
    expect(utf8Decode(encodePreservedRuns(decodePreservedRuns(bytes(doc))))).toBe(
      utf8Decode((await storage.get('checkpoints/preserved_runs.json'))!.bytes),
    );
    await unpreserveRun({ storage, profile: defaultProfile, runId: 'run-z' });
    expect(preservedRunIds(decodePreservedRuns((await storage.get('checkpoints/preserved_runs.json'))!.bytes))).toEqual(['run-a']);
    await expect(preserveRun({ storage, profile: defaultProfile, runId: '../escape' })).rejects.toMatchObject({
      reasonCode: 'checkpoint_key_invalid',
    });
  });
});

describe('run summaries', () => {
  const payload = JSON.parse(
    readFileSync(new URL('../fixtures/retention/phased-checkpoint-payload.json', import.meta.url), 'utf8'),
  ) as unknown;
  const latest: Snapshot<unknown> = {
    id: '3f2b8c1e-9d4a-4e7b-a5c6-1b2d3e4f5a6b',
    runId: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
    sequence: 4,
    createdAt: '2025-12-05T10:42:17.512Z',
    source: 'phase_complete',
    sourceDetails: [],
    status: 'completed',
    payload,
    integrity: { format_version: '1.0', algorithm: 'sha256', checksum: '0'.repeat(64) },
  };

  it('phasedWorkflow summarizer: phases_completed, total_cost_usd, errors_count from the phased payload', () => {
    expect(summarizePhasedPayload(payload)).toEqual({ phases_completed: 4, total_cost_usd: 3.17, errors_count: 2 });
    expect(summarizePhasedPayload({})).toEqual({ phases_completed: 0, total_cost_usd: 0, errors_count: 0 });
    const summary = buildRetentionSummary(
      { runId: latest.runId, latest, startedAt: '2025-12-05T10:00:00.000Z', checkpointCount: 4 },
      phasedWorkflowSummarizer,
      '2025-12-06T00:00:00.000Z',
    );
    expect(summary).toEqual({
      run_id: latest.runId,
      started_at: '2025-12-05T10:00:00.000Z',
      completed_at: '2025-12-05T10:42:17.512Z',
      phases_completed: 4,
      final_status: 'completed',
      total_cost_usd: 3.17,
      errors_count: 2,
      checkpoint_count: 4,
      last_checkpoint_id: latest.id,
      last_checkpoint_at: '2025-12-05T10:42:17.512Z',
      archived_at: '2025-12-06T00:00:00.000Z',
    });
    expect(external(retentionSummaryJsonSchema)(summary)).toBe(true);
    expect(decodeRetentionSummary(utf8Encode(JSON.stringify(summary)))).toEqual(summary);
  });

  it('the generic summarizer gives the fields it can and leaves the profile-specific ones out', () => {
    const summary = buildRetentionSummary(
      { runId: 'r', latest: { ...latest, runId: 'r' }, startedAt: '2025-12-05T10:00:00.000Z', checkpointCount: 4 },
      genericRetentionSummarizer,
      '2025-12-06T00:00:00.000Z',
    );
    expect(Object.keys(summary).sort()).toEqual([
      'archived_at',
      'checkpoint_count',
      'completed_at',
      'final_status',
      'last_checkpoint_at',
      'last_checkpoint_id',
      'run_id',
      'started_at',
    ]);
  });

  it('a summarizer cannot override the fields savepoint owns', () => {
    const sneaky = () => ({ run_id: 'other', checkpoint_count: 0, final_status: 'archived' });
    const summary = buildRetentionSummary({ runId: 'r', latest, startedAt: 'x', checkpointCount: 4 }, sneaky, '2025-12-06T00:00:00.000Z');
    expect(summary).toMatchObject({ run_id: 'r', checkpoint_count: 4, final_status: 'archived' });
  });
});

describe('retention_log.json', () => {
  it('appends one validated entry per apply, capped at maxLogEntries', async () => {
    const storage = memoryStorage();
    await writeRun(
      storage,
      defaultProfile,
      'run-a',
      Array.from({ length: 6 }, (_, i) => ({ sequence: i + 1, at: NOW - (6 - i) * DAY, status: 'in_progress' })),
    );
    for (let i = 0; i < 4; i++) {
      const plan = planRetention(
        await buildInventory({ storage, profile: defaultProfile }),
        { name: `p${i}`, rules: [keepLast(5 - i)] },
        NOW,
      );
      await applyRetention({ storage, profile: defaultProfile, plan, clock, maxLogEntries: 3 });
    }
    const raw = JSON.parse(utf8Decode((await storage.get('checkpoints/retention_log.json'))!.bytes)) as unknown;
    expect(external(retentionLogJsonSchema)(raw)).toBe(true);
    const log = decodeRetentionLog(utf8Encode(JSON.stringify(raw)));
    expect(log.entries.map((e) => e.policy)).toEqual(['p1', 'p2', 'p3']);
    expect(log.entries[2]).toMatchObject({
      status: 'completed',
      snapshots: { delete: 1 },
      files_deleted: 1,
      runs: [{ run_id: 'run-a', deleted: 1, compressed: 0, summarized: false, run_deleted: false }],
    });
  });

  it('never overwrites a log it cannot read; the report says the entry was not appended', async () => {
    const storage = memoryStorage();
    await writeRun(
      storage,
      defaultProfile,
      'run-a',
      Array.from({ length: 3 }, (_, i) => ({ sequence: i + 1, at: NOW - (3 - i) * DAY, status: 'in_progress' })),
    );
    await storage.put('checkpoints/retention_log.json', utf8Encode('my notes, not JSON'));
    const plan = planRetention(await buildInventory({ storage, profile: defaultProfile }), { rules: [keepLast(1)] }, NOW);
    const report = await applyRetention({ storage, profile: defaultProfile, plan, clock });
    expect(report.status).toBe('completed_with_skips');
    expect(report.log).toEqual({ key: 'checkpoints/retention_log.json', written: false, reasonCode: 'checkpoint_schema_invalid' });
    expect(utf8Decode((await storage.get('checkpoints/retention_log.json'))!.bytes)).toBe('my notes, not JSON');
  });
});
