/**
 * Test support for the resume tests: a phased-style profile (history keys derived from
 * sequence and trigger, as phased-workflow-github.md names them) and helpers that build
 * stores the way the writer lays them out (history → latest → index), by encoding
 * documents with `profile.document.encode` and `storage.put`.
 */
import { z } from 'zod';
import { defaultProfile, defineProfile, standardLayout, type JsonValue, type Profile, type Snapshot, type StorageAdapter } from 'savepoint';
import {
  encodeBatchFile,
  encodeRunIndex,
  gzip,
  IntegritySchema,
  jsonDocumentFormat,
  JsonValueSchema,
  newSnapshotId,
  Rfc3339Schema,
  toRfc3339,
  TriggerRecordSchema,
  type RunIndexEntry,
} from 'savepoint/toolkit';
import { phasedWorkflowResumeRule, phasedHistoryNaming } from 'savepoint/phased-workflow';
import { manualClock as publicManualClock, type ManualClock } from 'savepoint/testing';

export const PHASED_TRIGGERS = ['phase_complete', 'gate_decision', 'circuit_breaker', 'escalation', 'iteration', 'cost_threshold', 'expensive_op', 'destructive_op', 'manual'] as const;

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
    checkpoint_id: z.string(),
    run_id: z.string(),
    timestamp: Rfc3339Schema,
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

/** A phased-workflow-style test profile: `cp_{NNN}_{trigger}.json` in the run folder, plus `index.json`. */
export const phasedTestProfile: Profile<PhasedPayload> = defineProfile<PhasedPayload>({
  name: 'phasedTest',
  payload: PhasedPayload,
  triggers: Object.fromEntries(PHASED_TRIGGERS.map((t) => [t, {}])),
  statuses: { all: ['in_progress', 'completed', 'failed', 'paused'], terminal: ['completed', 'failed'], active: 'in_progress' },
  newSnapshotId: () => globalThis.crypto.randomUUID(),
  layout: standardLayout({
    root: 'checkpoints',
    history: phasedHistoryNaming,
  }),
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

export const T0 = Date.parse('2026-01-15T14:00:00.000Z');

export interface Written<P> {
  readonly snapshot: Snapshot<P>;
  readonly bytes: Uint8Array;
  /** Key of its history entry (plain, before any gzip). */
  readonly historyKey: string;
}

/** Encodes snapshot `sequence` of a run (deterministic content from the sequence). */
export async function encodeSnapshot<P>(
  profile: Profile<P>,
  runId: string,
  sequence: number,
  payload: P,
  over: { source?: string; status?: string; createdAtMs?: number; id?: string } = {},
): Promise<Written<P>> {
  const createdAtMs = over.createdAtMs ?? T0 + sequence * 60_000;
  const source = over.source ?? Object.keys(profile.triggers)[0]!;
  const id = over.id ?? profile.newSnapshotId({ runId, sequence, source, createdAtMs });
  const { bytes, snapshot } = await profile.document.encode({
    id,
    runId,
    sequence,
    createdAt: toRfc3339(createdAtMs),
    source,
    sourceDetails: [],
    status: over.status ?? profile.statuses.active,
    payload,
  });
  const historyKey = profile.layout.historyKey!({ runId, id, sequence, source });
  return { snapshot, bytes, historyKey };
}

/** The index entry of a written snapshot. */
export function indexEntry<P>(w: Written<P>, filePath = w.historyKey): RunIndexEntry {
  return { sequence: w.snapshot.sequence, checkpoint_id: w.snapshot.id, trigger: w.snapshot.source, timestamp: w.snapshot.createdAt, file_path: filePath, status: w.snapshot.status };
}

/** Writes the run's index over `entries`. */
export async function putIndex<P>(storage: StorageAdapter, profile: Profile<P>, runId: string, entries: readonly RunIndexEntry[]): Promise<void> {
  const sorted = [...entries].sort((a, b) => a.sequence - b.sequence);
  await storage.put(
    profile.layout.indexKey!(runId),
    encodeRunIndex({ run_id: runId, checkpoint_count: sorted.length, checkpoints: sorted, last_updated: toRfc3339(T0 + 10 ** 8) }),
  );
}

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

export interface RunBuild<P> {
  readonly written: Written<P>[];
}

/**
 * Writes snapshots 1..count of a run as the writer would: each history entry, then latest,
 * then the index. `latestAt` makes latest hold an older snapshot (a stale latest).
 */
export async function writeRun<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  count: number,
  state: (n: number) => P,
  opts: { latestAt?: number; index?: boolean | number; status?: (n: number) => string; source?: (n: number) => string; createdAtMs?: (n: number) => number } = {},
): Promise<RunBuild<P>> {
  const written: Written<P>[] = [];
  for (let n = 1; n <= count; n++) {
    const w = await encodeSnapshot(profile, runId, n, state(n), {
      ...(opts.status ? { status: opts.status(n) } : {}),
      ...(opts.source ? { source: opts.source(n) } : {}),
      ...(opts.createdAtMs ? { createdAtMs: opts.createdAtMs(n) } : {}),
    });
    written.push(w);
    await storage.put(w.historyKey, w.bytes);
  }
  const latest = written[(opts.latestAt ?? count) - 1];
  if (latest) await storage.put(profile.layout.latestKey(runId), latest.bytes);
  const indexUpTo = opts.index === false ? 0 : typeof opts.index === 'number' ? opts.index : count;
  if (profile.layout.indexKey && opts.index !== false) await putIndex(storage, profile, runId, written.slice(0, indexUpTo).map((w) => indexEntry(w)));
  return { written };
}

/** Flips one bit of `bytes` (a copy). */
export function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = bytes.slice();
  const i = Math.floor(bit / 8) % out.length;
  out[i] = out[i]! ^ (1 << bit % 8);
  return out;
}

/** Replaces a stored value with a corrupted copy. */
export async function corrupt(storage: StorageAdapter, key: string, how: (bytes: Uint8Array) => Uint8Array): Promise<void> {
  const stored = await storage.get(key);
  if (!stored) throw new Error(`no ${key} to corrupt`);
  await storage.put(key, how(stored.bytes));
}

/** Gzips a history entry in place (as retention does after 24 h): `key` → `key.gz`. */
export async function compressEntry(storage: StorageAdapter, key: string): Promise<string> {
  const stored = await storage.get(key);
  if (!stored) throw new Error(`no ${key} to compress`);
  await storage.put(`${key}.gz`, gzip(stored.bytes));
  await storage.delete(key);
  return `${key}.gz`;
}

export { defaultProfile, encodeBatchFile, newSnapshotId };

/** savepoint/testing's manualClock, starting at {@link T0}. */
export const manualClock = (start = T0): ManualClock => publicManualClock(start);
