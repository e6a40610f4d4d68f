/**
 * Coalescing (snapshot-lifecycle.md): "if two triggers fire within 3 seconds with no
 * material state change, keep only one snapshot and append trigger source to
 * source_details".
 *
 * Where a coalesced trigger is recorded depends on the profile (`immutableHistory`):
 *
 * - **Immutable history** (snapshot-lifecycle.md: "immutable history:
 *   checkpoints/<run_id>/history/<snapshot_id>.json"; snapshotLifecycle and the default
 *   profile). A history entry's bytes never change after its first write. A trigger coalesced
 *   into the newest snapshot goes to `latest` only — the spec's one mutable file — whose
 *   `source_details` grows (`latest` is replaced alone: one put, no ordering question). When
 *   the next snapshot is written, its history entry repeats those records, each tagged
 *   `coalesced_into: <snapshot id>`, before its own, so a trigger is always in `latest` or
 *   in history (DESIGN invariant 4) and survives `latest` moving on. `latest` then holds the
 *   same snapshot as its history entry with a longer `source_details` (history's list is a
 *   prefix of it): invariant 2 as worded in DESIGN.md. Triggers folded into a snapshot
 *   before its first write (a burst) are in its history entry like any other record.
 * - **Rewritable history** (the other profiles): the still-open snapshot — only the newest
 *   one, only inside its window — is rewritten in history and `latest` together, with an
 *   atomic batch when the adapter has one, else history first (if its version is unchanged),
 *   then `latest`; a crash in between leaves `latest` with the same snapshot and a shorter
 *   `source_details`, which the next write levels.
 *
 * Either way the trigger is acknowledged only once its record is durable, and concurrent
 * triggers are folded before anything is written (a burst is one write).
 *
 * @module
 */
import { canonicalJson } from '../codec/canonical-json.js';
import { isCheckpointError } from '../contract/errors.js';
import type { Snapshot, TriggerRecord } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import type { Profile } from '../contract/profile.js';
import { decodeStoredSnapshot } from '../snapshot-io/read-snapshot.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { HeadLocation } from './sequence-recovery.js';
import { sameMaterial, type MaterialState } from './triggers.js';

/** What the coalescing rule needs to know about the newest snapshot. */
export interface CoalesceBase {
  /** The snapshot's material state (see `materialText`, `sameMaterial`). */
  readonly state: MaterialState;
  /** When its first trigger fired, in epoch ms. */
  readonly createdAtMs: number;
  /** False when the snapshot cannot take more `source_details` (e.g. recovered from a compressed file). */
  readonly open: boolean;
  /** How a resume treats the snapshot (its source's `TriggerSpec.resumeAs`). */
  readonly resumeAs?: string;
}

/**
 * snapshot-lifecycle.md: "if two triggers fire within 3 seconds with no material state
 * change, keep only one snapshot and append trigger source to source_details".
 *
 * The window is measured from the newest snapshot's first trigger and is inclusive
 * (a trigger exactly `windowMs` later still coalesces); it does not slide with each
 * coalesced trigger, so a steady stream of no-change triggers yields one snapshot per
 * window and `source_details` stays bounded. Only the newest snapshot is a candidate:
 * going back to an older one would make `latest` show a state that is no longer current.
 *
 * "Material change" is decided on the canonical JSON of `{ status, materialView(payload) }`.
 * Comparing those texts is exactly comparing their SHA-256 digests (canonical JSON is
 * deterministic), without a WebCrypto round trip on every checkpoint; the writer keeps one
 * such text, of the newest snapshot, in memory.
 *
 * A `critical` trigger is never coalesced: it gets its own snapshot, because resume reads
 * the snapshot's own `source` (e.g. phased-workflow resumes a `circuit_breaker` at
 * `human_review`); folded into an earlier `expensive_op` it would resume as that trigger.
 * For the same reason a trigger whose `resumeAs` differs from the snapshot's is never
 * coalesced into it (a `gate_decision` joining a `phase_complete` would resume at the next
 * phase instead of the gate).
 */
export function shouldCoalesce(
  base: CoalesceBase | undefined,
  state: MaterialState,
  at: number,
  windowMs: number,
  critical = false,
  resumeAs?: string,
): boolean {
  if (critical || !base || !base.open || base.resumeAs !== resumeAs) return false;
  const elapsed = at - base.createdAtMs;
  return elapsed >= 0 && elapsed <= windowMs && sameMaterial(base.state, state);
}

/** `records`, coalesced into snapshot `into`, as the next snapshot's history entry carries them. */
export function carriedRecords(records: readonly TriggerRecord[], into: string): TriggerRecord[] {
  return records.map((r) => ({ source: r.source, at: r.at, ...(r.priority ? { priority: r.priority } : {}), coalesced_into: into }));
}

/** The snapshot with `id` as its stored history entry (or batch member) holds it; undefined when unreadable. */
async function historyCopy<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  location: HeadLocation,
  id: string,
): Promise<Snapshot<P> | undefined> {
  if (location.kind !== 'history' && location.kind !== 'batch') return undefined;
  try {
    const obj = await storage.get(location.key);
    if (!obj) return undefined;
    if (location.kind === 'history') return await decodeStoredSnapshot(storage, profile, location.key, obj.bytes);
    for (const m of await decodeBatchFile(storage, profile, location.key, obj.bytes)) if (m.ok && m.snapshot.id === id) return m.snapshot;
    return undefined;
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
}

/**
 * The recovered head's coalesced triggers that only `latest` holds (immutable history): the
 * records its history entry lacks, which the next snapshot's history entry must carry. Costs
 * one read, only when the head lists coalesced triggers. When its history copy cannot be
 * read (compressed, missing, damaged) every record is carried: a record twice is better than
 * a trigger lost.
 */
export async function latestOnlyRecords<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  head: Snapshot<P>,
  location: HeadLocation,
): Promise<TriggerRecord[]> {
  const own = head.sourceDetails.filter((r) => r.coalesced_into === undefined);
  if (own.length === 0 || location.kind === 'latest') return [];
  const copy = await historyCopy(storage, profile, location, head.id);
  if (!copy || copy.id !== head.id) return own;
  // Counted, not a set: two triggers of one burst can be the same record (same source, same
  // millisecond), and the history copy holding one of them does not hold the other.
  const inHistory = new Map<string, number>();
  for (const r of copy.sourceDetails) {
    const text = canonicalJson(r);
    inHistory.set(text, (inHistory.get(text) ?? 0) + 1);
  }
  return own.filter((r) => {
    const text = canonicalJson(r);
    const left = inHistory.get(text) ?? 0;
    if (left > 0) inHistory.set(text, left - 1);
    return left === 0;
  });
}
