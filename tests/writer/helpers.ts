import { z } from 'zod';
import {
  defaultProfile,
  defineProfile,
  listAll,
  memoryStorage,
  standardLayout,
  type Clock,
  type Profile,
  type Snapshot,
  type StorageAdapter,
  type TriggerRecord,
} from 'savepoint';
import {
  historyBySnapshotId,
  jsonDocumentFormat,
  IntegritySchema,
  PRIORITIES,
  readSnapshot,
  Rfc3339Schema,
  TriggerRecordSchema,
  type TimerHandle,
} from 'savepoint/toolkit';
import { phasedHistoryNaming } from 'savepoint/phased-workflow';
import { manualClock as publicManualClock, type ManualClock } from 'savepoint/testing';

/** Yields to the event loop (crypto digests and storage calls settle outside the microtask queue). */
export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

export const T0 = Date.parse('2025-06-01T12:00:00.000Z');

export type { ManualClock };

/** savepoint/testing's manualClock, starting at {@link T0}. */
export const manualClock = (start = T0): ManualClock => publicManualClock(start);

/**
 * A clock whose time is set by hand and whose short timers (retry backoff, up to a minute)
 * fire at once; longer ones (heartbeat) never fire.
 */
export function instantTimerClock(start = T0): Clock & { set(ms: number): void; advanceBy(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    setTimeout: (cb: () => void, ms: number) => globalThis.setTimeout(ms <= 60_000 ? cb : () => undefined, 0),
    clearTimeout: (h: TimerHandle) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
    set(ms: number) {
      t = ms;
    },
    advanceBy(ms: number) {
      t += ms;
    },
  };
}

/** memoryStorage without `batch`: the plain sequential write path (as on fs). */
export function sequentialMemory(inner: StorageAdapter = memoryStorage()): StorageAdapter {
  return {
    name: 'memory-sequential',
    capabilities: { ...inner.capabilities, atomicBatch: false },
    get: (k) => inner.get(k),
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    close: () => inner.close(),
  };
}

/** A storage whose writes wait until `release()` (a slow store, for group commit and backpressure). */
export function gatedStorage(inner: StorageAdapter = memoryStorage()): StorageAdapter & { hold(): void; release(): void; writes: string[] } {
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  const writes: string[] = [];
  const wait = async (): Promise<void> => {
    if (gate) await gate;
  };
  return {
    name: 'gated',
    capabilities: inner.capabilities,
    writes,
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      gate = undefined;
      open?.();
    },
    get: (k) => inner.get(k),
    async put(k, b, o) {
      await wait();
      writes.push(`put ${k}`);
      return inner.put(k, b, o);
    },
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    async batch(ops) {
      await wait();
      writes.push(`batch ${ops.map((o) => o.key).join(',')}`);
      return inner.batch!(ops);
    },
    close: () => inner.close(),
  };
}

/** Every snapshot stored in a run's history (default-style layouts), by sequence. */
export async function historyOf<P>(storage: StorageAdapter, profile: Profile<P>, runId: string): Promise<Snapshot<P>[]> {
  const out: Snapshot<P>[] = [];
  for (const e of await listAll(storage, profile.layout.runsPrefix)) {
    const info = profile.layout.classify(e.key);
    if (info?.kind !== 'history' || info.runId !== runId) continue;
    const s = await readSnapshot(storage, profile, e.key);
    if (s) out.push(s);
  }
  return out.sort((a, b) => a.sequence - b.sequence);
}

export const latestOf = <P>(storage: StorageAdapter, profile: Profile<P>, runId: string): Promise<Snapshot<P> | undefined> =>
  readSnapshot(storage, profile, profile.layout.latestKey(runId));

/**
 * The triggers coalesced into snapshot `id`, wherever they are stored: its history entry's own
 * records, then those later history entries carry for it (`coalesced_into`, immutable history);
 * or, when `latest` holds it with a longer list (its extra records not carried yet), latest's.
 * Records a snapshot carries for its predecessor are not its own and are left out.
 */
export function triggersOf<P>(history: readonly Snapshot<P>[], latest: Snapshot<P> | undefined, id: string): TriggerRecord[] {
  const own = (s: Snapshot<P> | undefined): TriggerRecord[] => (s ? s.sourceDetails.filter((r) => r.coalesced_into === undefined) : []);
  const stored = [...own(history.find((s) => s.id === id)), ...history.flatMap((s) => s.sourceDetails.filter((r) => r.coalesced_into === id).map(({ coalesced_into: _into, ...r }) => r))];
  const inLatest = latest?.id === id ? own(latest) : [];
  return inLatest.length > stored.length ? inLatest : stored;
}

/** A storage that records every value put under each key, by put or batch (to observe that history is never rewritten). */
export function putLog(inner: StorageAdapter): StorageAdapter & { readonly puts: Map<string, Uint8Array[]> } {
  const puts = new Map<string, Uint8Array[]>();
  const seen = (key: string, bytes: Uint8Array): void => {
    puts.set(key, [...(puts.get(key) ?? []), bytes.slice()]);
  };
  return {
    ...inner,
    name: `${inner.name}-logged`,
    puts,
    get: (k) => inner.get(k),
    put: (k, b, o) => (seen(k, b), inner.put(k, b, o)),
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    close: () => inner.close(),
    ...(inner.batch
      ? {
          batch: (ops) => {
            for (const op of ops) if (op.type === 'put') seen(op.key, op.bytes);
            return inner.batch!(ops);
          },
        }
      : {}),
  };
}

/**
 * A phased-workflow-like test profile (the real one is built by the profiles engineer):
 * the spec's triggers and priorities, `cp_NNN_trigger.json` history in the run folder,
 * an index, a volatile `updated_at` left out of the material view.
 */
const PhasedPayload = z.object({ phase: z.string(), cost: z.number(), updated_at: z.string().optional(), blob: z.array(z.string()).optional() }).strict();
type PhasedPayloadT = z.infer<typeof PhasedPayload>;
const PhasedDoc = z
  .object({
    checkpoint_id: z.string(),
    run_id: z.string(),
    timestamp: Rfc3339Schema,
    trigger: z.string(),
    source_details: z.array(TriggerRecordSchema),
    priority: z.enum(PRIORITIES).optional(),
    sequence_number: z.number().int().min(1),
    status: z.enum(['in_progress', 'completed', 'failed']),
    state: PhasedPayload,
    integrity: IntegritySchema,
  })
  .strict();
type PhasedDocT = z.infer<typeof PhasedDoc>;

export const phasedLike: Profile<PhasedPayloadT> = defineProfile<PhasedPayloadT>({
  name: 'phasedLike',
  payload: PhasedPayload,
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
  newSnapshotId: () => globalThis.crypto.randomUUID(),
  layout: standardLayout({
    root: 'checkpoints',
    history: phasedHistoryNaming,
  }),
  document: jsonDocumentFormat<PhasedPayloadT, PhasedDocT>({
    schema: PhasedDoc,
    toDocument: (s) => ({
      checkpoint_id: s.id,
      run_id: s.runId,
      timestamp: s.createdAt,
      trigger: s.source,
      source_details: s.sourceDetails,
      ...(s.priority ? { priority: s.priority } : {}),
      sequence_number: s.sequence,
      status: s.status as PhasedDocT['status'],
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
const PlanPayload = z.object({ current_task_index: z.number().int(), last_activity: z.string().optional() }).strict();
type PlanPayloadT = z.infer<typeof PlanPayload>;
const PlanDoc = z
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
type PlanDocT = z.infer<typeof PlanDoc>;

export const planLike: Profile<PlanPayloadT> = defineProfile<PlanPayloadT>({
  name: 'planLike',
  payload: PlanPayload,
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
  document: jsonDocumentFormat<PlanPayloadT, PlanDocT>({
    schema: PlanDoc,
    toDocument: (s) => ({
      plan_number: s.runId,
      status: s.status as PlanDocT['status'],
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

export { defaultProfile, historyBySnapshotId };
