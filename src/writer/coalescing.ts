/**
 * Coalescing (snapshot-lifecycle.md): "if two triggers fire within 3 seconds with no
 * material state change, keep only one snapshot and append trigger source to
 * source_details".
 *
 * Design decision — coalescing versus immutable history. History entries are immutable
 * and `latest` must never differ from history (DESIGN.md invariant 2), yet the spec wants
 * the kept snapshot to list the later trigger. The writer records a coalesced trigger by
 * REWRITING THE STILL-OPEN SNAPSHOT — only the newest one, only inside its window — in
 * history and `latest` together, and acknowledges the trigger only once that rewrite is
 * durable:
 * - with an atomic batch (memory; adapters declaring `atomicBatch`) both keys change in one
 *   `batch()`, so they are never seen apart;
 * - without one (fs) history is replaced first (if its version is unchanged), then
 *   `latest`; a crash in between leaves `latest` holding the same snapshot (id, sequence,
 *   status, payload, time) with a shorter `source_details` — never a different state — and
 *   the next write levels it.
 * Concurrent triggers are folded before anything is written (a burst is one write). The
 * alternatives were rejected: carrying coalesced triggers into the next snapshot leaves them
 * unrecorded until it comes (lost on a crash, invisible in the kept snapshot), and a
 * separate record file would be a key outside the profile's layout.
 *
 * @module
 */
/** What the coalescing rule needs to know about the newest snapshot. */
export interface CoalesceBase {
  /** The snapshot's material state as canonical JSON (see `materialText`). */
  readonly material: string;
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
export function shouldCoalesce(base: CoalesceBase | undefined, material: string, at: number, windowMs: number, critical = false, resumeAs?: string): boolean {
  if (critical || !base || !base.open || base.resumeAs !== resumeAs) return false;
  const elapsed = at - base.createdAtMs;
  return elapsed >= 0 && elapsed <= windowMs && base.material === material;
}
