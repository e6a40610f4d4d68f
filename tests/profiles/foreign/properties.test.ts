import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, memoryStorage, parseJson, planResume, type JsonObject, type JsonValue } from 'savepoint';
import { decodeStoredSnapshotTolerant, type SnapshotDraft } from 'savepoint/toolkit';
import { manualClock } from 'savepoint/testing';
import { planExecutor } from 'savepoint/plan-executor';
import { snapshotLifecycle, type SnapshotLifecyclePayload } from 'savepoint/snapshot-lifecycle';
import { phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { jsonValue } from '../arbitraries.js';
import { foreignFixture, PHASED_RUN } from '../../support/foreign.js';

const clock = manualClock('2026-06-01T00:00:00Z');

/** Any RFC 3339 time: any offset (±14 h), 0–9 fractional digits, `Z` or a numeric offset. */
const anyTime = fc
  .record({
    ms: fc.integer({ min: Date.UTC(2001, 0, 1), max: Date.UTC(2098, 11, 31) }),
    offsetMin: fc.oneof(fc.constant(0), fc.integer({ min: -14 * 60, max: 14 * 60 })),
    digits: fc.integer({ min: 0, max: 9 }),
    zulu: fc.boolean(),
  })
  .map(({ ms, offsetMin, digits, zulu }) => {
    const offset = zulu ? 0 : offsetMin;
    const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
    const frac =
      digits === 0
        ? ''
        : `.${String(ms % 1000)
            .padStart(3, '0')
            .padEnd(digits, '7')
            .slice(0, digits)}`;
    const sign = offset < 0 ? '-' : '+';
    const abs = Math.abs(offset);
    const tz = zulu ? 'Z' : `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
    return { text: `${local}${frac}${tz}` };
  });

/** Top-level members another tool may add (never a spec member or savepoint's own). */
const vendorFields = (taken: readonly string[]) =>
  fc.dictionary(
    fc.stringMatching(/^x_[a-z_]{1,10}$/).filter((k) => !taken.includes(k)),
    jsonValue,
    { maxKeys: 3 },
  );

// Restates plan-executor.md's members on purpose (an oracle): importing PLAN_EXECUTOR_SPEC_MEMBERS would test the code against itself.
const PLAN_MEMBERS = [
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
  'integrity',
];

describe('property: any spec-valid foreign document resumes', () => {
  it('planExecutor', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          plan_number: fc.stringMatching(/^[0-9]{2}[a-z]?$/),
          current_task_index: fc.nat(50),
          current_task: fc.string({ maxLength: 20 }),
          status: fc.constantFrom('in_progress', 'completed', 'failed', 'timeout'),
          completed: fc.array(fc.record({ name: fc.string({ maxLength: 10 }), commit: fc.stringMatching(/^[0-9a-f]{6,12}$/) }), {
            maxLength: 4,
          }),
          error: fc.option(fc.string({ maxLength: 10 })),
        }),
        anyTime,
        vendorFields(PLAN_MEMBERS),
        async (p, time, vendor) => {
          const doc = {
            ...vendor,
            plan_number: p.plan_number,
            current_task_index: p.current_task_index,
            current_task: p.current_task,
            status: p.status,
            last_activity: time.text,
            completed_tasks: p.completed,
            error: p.error,
          };
          const storage = memoryStorage();
          await storage.put(`plans/${p.plan_number}-CHECKPOINT.json`, utf8Encode(JSON.stringify(doc)));
          const plan = await planResume({ storage, profile: planExecutor, runId: p.plan_number, clock });
          expect(plan.warnings.map((w) => w.code)).toContain('checkpoint_unsealed');
          expect(plan.snapshot.status).toBe(p.status);
          expect(Date.parse(plan.snapshot.createdAt)).toBe(Date.parse(time.text));
          expect(plan.payload).toMatchObject({ current_task_index: p.current_task_index, completed_tasks: p.completed });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('snapshotLifecycle and phasedWorkflow (spec fields, any offset, open values, other id formats, vendor fields)', async () => {
    const lifecycle = parseJson(foreignFixture('snapshot-lifecycle', 'latest.spec.json')) as JsonObject;
    const phased = parseJson(foreignFixture('phased-workflow', 'cp_2_gate_decision.json')) as JsonObject;
    await fc.assert(
      fc.asyncProperty(
        anyTime,
        fc.stringMatching(/^[a-z][a-z_]{0,12}$/),
        fc.stringMatching(/^cp_[0-9A-Za-z][0-9A-Za-z.-]{0,19}_[a-z0-9]{1,12}$/),
        fc.boolean(),
        vendorFields(['integrity']),
        fc.integer({ min: 1, max: 999_999 }),
        async (time, stepStatus, id, sealed, vendor, sequence) => {
          const storage = memoryStorage();
          const run = 'sess-1';
          const life = {
            ...lifecycle,
            ...vendor,
            snapshot_id: id,
            created_at: time.text,
            run_id: run,
            step_state: { ...(lifecycle.step_state as JsonObject), step_status: stepStatus },
          } as Record<string, JsonValue>;
          if (!sealed) delete life.integrity;
          await storage.put(`checkpoints/${run}/history/${id}.json`, utf8Encode(JSON.stringify(life)));
          const a = await planResume({ storage, profile: snapshotLifecycle, runId: run, clock });
          expect(a.snapshot.id).toBe(id);
          expect((a.payload as SnapshotLifecyclePayload).step_state.step_status).toBe(stepStatus);
          expect(a.warnings.map((w) => w.code)).toContain(sealed ? 'checkpoint_foreign_seal' : 'checkpoint_unsealed');

          const n8n = { ...phased, ...vendor, timestamp: time.text, sequence_number: sequence };
          const name = `cp_${sequence % 2 === 0 ? String(sequence).padStart(3, '0') : sequence}_gate_decision.json`;
          await storage.put(`checkpoints/${PHASED_RUN}/${name}`, utf8Encode(JSON.stringify(n8n)));
          const b = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
          expect(b.snapshot.sequence).toBe(sequence);
          expect((b.payload as PhasedWorkflowPayload).phase).toBe('phase_2_design');
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('property: any single-byte change to a sealed history file is reported', () => {
  const lifecycleDraft: SnapshotDraft<SnapshotLifecyclePayload> = {
    id: 'cp_20260115T143000000Z_abcd1234',
    runId: 'sess-1',
    sequence: 7,
    createdAt: '2026-01-15T14:30:00.000Z',
    source: 'step_boundary',
    sourceDetails: [{ source: 'manual', at: '2026-01-15T14:30:01.000Z' }],
    status: 'in_progress',
    payload: {
      step_state: {
        plan_path: 'p.md',
        step_id: 's1',
        step_ordinal: 1,
        step_status: 'in_progress',
        todo_compliance: { result: 'PASS', violations: [], checked_at: '2026-01-15T14:29:00.000Z' },
        resume_hints: { eligible: true, reason_code: 'ok', next_actions: ['a'] },
      },
      context_digest: { window_pressure: 'low', protected_artifacts: ['x'], dropped_items: 0, policy_profile: 'p' },
      command_outcomes: [{ kind: 'shell', name: 'ls', result: 'PASS', duration_ms: 3, summary: 'ok' }],
    },
  };

  for (const [name, profile, key, draft] of [
    ['snapshotLifecycle', snapshotLifecycle, 'checkpoints/sess-1/history/cp_20260115T143000000Z_abcd1234.json', async () => lifecycleDraft],
    [
      'phasedWorkflow',
      phasedWorkflow,
      `checkpoints/${PHASED_RUN}/cp_002_gate_decision.json`,
      async () => {
        const read = await decodeStoredSnapshotTolerant(
          memoryStorage(),
          phasedWorkflow,
          'x',
          utf8Encode(foreignFixture('phased-workflow', 'cp_2_gate_decision.json')),
        );
        const { integrity: _i, ...d } = read.snapshot;
        return d;
      },
    ],
  ] as const) {
    it(name, async () => {
      const sealed = await (profile.document as { encode(d: unknown): Promise<{ bytes: Uint8Array }> }).encode(await draft());
      const storage = memoryStorage();
      // The intact file reads strictly, without warnings.
      expect((await decodeStoredSnapshotTolerant(storage, profile as never, key, sealed.bytes)).warnings).toEqual([]);
      await fc.assert(
        fc.asyncProperty(fc.nat(sealed.bytes.length - 1), fc.integer({ min: 1, max: 255 }), async (at, delta) => {
          const changed = sealed.bytes.slice();
          changed[at] = (changed[at]! + delta) % 256;
          let error: unknown;
          try {
            await decodeStoredSnapshotTolerant(storage, profile as never, key, changed);
          } catch (err) {
            error = err;
          }
          expect(isCheckpointError(error)).toBe(true);
        }),
        { numRuns: 300 },
      );
    });
  }
});
