/**
 * Test profiles: two phased-workflow-style ones (the writer tests' small payload, the resume
 * tests' spec-shaped payload and resume rule) sharing phased-workflow's layout, a
 * plan-executor-like one, and the payloads the resume tests store.
 */
import { z } from 'zod';
import { defineProfile, standardLayout, type JsonValue, type Profile } from 'savepoint';
import { IntegritySchema, jsonDocumentFormat, JsonValueSchema, PRIORITIES, Rfc3339Schema, TriggerRecordSchema } from 'savepoint/toolkit';
import { phasedHistoryNaming, phasedWorkflowResumeRule } from 'savepoint/phased-workflow';

/**
 * What the phased-style test profiles share with phased-workflow: random UUID ids, and
 * `checkpoints/<run>/cp_{NNN}_{trigger}.json` history beside the run's `latest.json` and `index.json`.
 */
const phasedStyle = {
  newSnapshotId: () => globalThis.crypto.randomUUID(),
  layout: standardLayout({ root: 'checkpoints', history: phasedHistoryNaming }),
};

/** The fields every phased-style document begins with. */
const envelope = { checkpoint_id: z.string(), run_id: z.string(), timestamp: Rfc3339Schema };

// Restates phased-workflow-github.md's triggers on purpose (an oracle): importing the profile's PHASED_TRIGGERS would test the code against itself.
export const PHASED_TRIGGERS = [
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

const PhasedPayload = z.object({
  phase: z.string().regex(/^phase_\d+(_\d+)?_[a-z0-9_]+$/),
  state_snapshot: z.object({
    phase_outputs: z.record(z.string(), z.record(z.string(), JsonValueSchema).nullable()),
    circuit_breaker_state: z.record(z.string(), JsonValueSchema),
    cost_accumulated: z.number(),
    active_lessons: z.array(JsonValueSchema),
  }),
});
export type PhasedPayload = z.infer<typeof PhasedPayload>;

const PhasedDocument = z
  .object({
    ...envelope,
    trigger: z.enum(PHASED_TRIGGERS),
    source_details: z.array(TriggerRecordSchema),
    status: z.enum(['in_progress', 'completed', 'failed', 'paused']),
    sequence_number: z.number().int().min(1),
    phase: z.string(),
    state_snapshot: PhasedPayload.shape.state_snapshot,
    integrity: IntegritySchema,
  })
  .strict();
type PhasedDocument = z.infer<typeof PhasedDocument>;

/** The resume tests' phased-workflow-style profile: the spec's payload shape (phase, state_snapshot) and resume rule. */
export const phasedTestProfile: Profile<PhasedPayload> = defineProfile<PhasedPayload>({
  name: 'phasedTest',
  payload: PhasedPayload,
  triggers: Object.fromEntries(PHASED_TRIGGERS.map((t) => [t, {}])),
  statuses: { all: ['in_progress', 'completed', 'failed', 'paused'], terminal: ['completed', 'failed'], active: 'in_progress' },
  ...phasedStyle,
  document: jsonDocumentFormat<PhasedPayload, PhasedDocument>({
    schema: PhasedDocument,
    toDocument: (s) => ({
      checkpoint_id: s.id,
      run_id: s.runId,
      timestamp: s.createdAt,
      trigger: s.source as PhasedDocument['trigger'],
      source_details: s.sourceDetails,
      status: s.status as PhasedDocument['status'],
      sequence_number: s.sequence,
      phase: s.payload.phase,
      state_snapshot: s.payload.state_snapshot,
    }),
    fromDocument: (d) => ({
      id: d.checkpoint_id,
      runId: d.run_id,
      sequence: d.sequence_number,
      createdAt: d.timestamp,
      source: d.trigger,
      sourceDetails: d.source_details,
      status: d.status,
      payload: { phase: d.phase, state_snapshot: d.state_snapshot },
    }),
  }),
  resume: phasedWorkflowResumeRule,
});

/**
 * The writer tests' phased-workflow-like profile: the spec's triggers and priorities, a small
 * payload with a volatile `updated_at` left out of the material view.
 */
const PhasedLikePayloadSchema = z
  .object({ phase: z.string(), cost: z.number(), updated_at: z.string().optional(), blob: z.array(z.string()).optional() })
  .strict();
type PhasedLikePayload = z.infer<typeof PhasedLikePayloadSchema>;
const PhasedLikeDocSchema = z
  .object({
    ...envelope,
    trigger: z.string(),
    source_details: z.array(TriggerRecordSchema),
    priority: z.enum(PRIORITIES).optional(),
    sequence_number: z.number().int().min(1),
    status: z.enum(['in_progress', 'completed', 'failed']),
    state: PhasedLikePayloadSchema,
    integrity: IntegritySchema,
  })
  .strict();
type PhasedLikeDoc = z.infer<typeof PhasedLikeDocSchema>;

export const phasedLike: Profile<PhasedLikePayload> = defineProfile<PhasedLikePayload>({
  name: 'phasedLike',
  payload: PhasedLikePayloadSchema,
  triggers: {
    phase_complete: { priority: 'high' },
    gate_decision: { priority: 'high' },
    circuit_breaker: { priority: 'critical' },
    escalation: { priority: 'high' },
    iteration: { priority: 'medium' },
    cost_threshold: { priority: 'high' },
    expensive_op: { priority: 'medium' },
    destructive_op: { priority: 'high' },
    manual: {},
  },
  heartbeat: false,
  statuses: { all: ['in_progress', 'completed', 'failed'], terminal: ['completed', 'failed'], active: 'in_progress' },
  materialView: (p) => ({ ...p, updated_at: undefined }),
  ...phasedStyle,
  document: jsonDocumentFormat<PhasedLikePayload, PhasedLikeDoc>({
    schema: PhasedLikeDocSchema,
    toDocument: (s) => ({
      checkpoint_id: s.id,
      run_id: s.runId,
      timestamp: s.createdAt,
      trigger: s.source,
      source_details: s.sourceDetails,
      ...(s.priority ? { priority: s.priority } : {}),
      sequence_number: s.sequence,
      status: s.status as PhasedLikeDoc['status'],
      state: s.payload,
    }),
    fromDocument: (d) => ({
      id: d.checkpoint_id,
      runId: d.run_id,
      createdAt: d.timestamp,
      source: d.trigger,
      sourceDetails: d.source_details,
      ...(d.priority ? { priority: d.priority } : {}),
      sequence: d.sequence_number,
      status: d.status,
      payload: d.state,
    }),
  }),
});

/** A plan-executor-like profile: one `plans/NN-CHECKPOINT.json`, no history, no index. */
const PlanLikePayloadSchema = z.object({ current_task_index: z.number().int(), last_activity: z.string().optional() }).strict();
type PlanLikePayload = z.infer<typeof PlanLikePayloadSchema>;
const PlanLikeDocSchema = z
  .object({
    plan_number: z.string(),
    status: z.enum(['in_progress', 'completed', 'failed', 'timeout']),
    seq: z.number().int(),
    id: z.string(),
    created: Rfc3339Schema,
    source: z.string(),
    source_details: z.array(TriggerRecordSchema),
    current_task_index: z.number().int(),
    last_activity: z.string().optional(),
    integrity: IntegritySchema,
  })
  .strict();
type PlanLikeDoc = z.infer<typeof PlanLikeDocSchema>;

export const planLike: Profile<PlanLikePayload> = defineProfile<PlanLikePayload>({
  name: 'planLike',
  payload: PlanLikePayloadSchema,
  triggers: { task_complete: {}, manual: {} },
  statuses: { all: ['in_progress', 'completed', 'failed', 'timeout'], terminal: ['completed', 'failed', 'timeout'], active: 'in_progress' },
  heartbeat: false,
  assertRunId: (id) => {
    if (!/^\d{2}$/.test(id)) throw new Error('plan number');
  },
  layout: {
    runsPrefix: 'plans/',
    latestKey: (id) => `plans/${id}-CHECKPOINT.json`,
    lockKey: (id) => `plans/.${id}-lock.json`,
    classify: (key) => {
      const m = /^plans\/(\d{2})-CHECKPOINT\.json$/.exec(key);
      if (m) return { kind: 'latest', runId: m[1]!, compressed: false };
      const l = /^plans\/\.(\d{2})-lock\.json$/.exec(key);
      return l ? { kind: 'lock', runId: l[1]!, compressed: false } : undefined;
    },
  },
  document: jsonDocumentFormat<PlanLikePayload, PlanLikeDoc>({
    schema: PlanLikeDocSchema,
    toDocument: (s) => ({
      plan_number: s.runId,
      status: s.status as PlanLikeDoc['status'],
      seq: s.sequence,
      id: s.id,
      created: s.createdAt,
      source: s.source,
      source_details: s.sourceDetails,
      current_task_index: s.payload.current_task_index,
      ...(s.payload.last_activity ? { last_activity: s.payload.last_activity } : {}),
    }),
    fromDocument: (d) => ({
      id: d.id,
      runId: d.plan_number,
      sequence: d.seq,
      createdAt: d.created,
      source: d.source,
      sourceDetails: d.source_details,
      status: d.status,
      payload: { current_task_index: d.current_task_index, ...(d.last_activity ? { last_activity: d.last_activity } : {}) },
    }),
  }),
});

/** Default-profile state of snapshot `n`. */
export const defaultState = (n: number): JsonValue => ({ step: n, notes: `state ${n}` });

/** Phased payload of snapshot `n`: phases 0..n-1 completed. */
export function phasedState(n: number, lessons: JsonValue[] = ['L-1']): PhasedPayload {
  const keys = ['phase_0', 'phase_0_5', 'phase_1', 'phase_2', 'phase_3', 'phase_4', 'phase_5', 'phase_6', 'phase_7', 'phase_8'];
  const done = Math.min(keys.length, n);
  return {
    phase: `${keys[Math.max(0, done - 1)]}_work`,
    state_snapshot: {
      phase_outputs: Object.fromEntries(keys.map((k, i) => [k, i < done ? { result: `output ${i}` } : null])),
      circuit_breaker_state: { github: 'closed' },
      cost_accumulated: n * 0.5,
      active_lessons: lessons,
    },
  };
}
