import { sha256Hex } from '../codec/sha256.js';

/** What the coalescing rule needs to know about the newest snapshot. */
export interface CoalesceBase {
  /** sha256 of the snapshot's material text. */
  readonly digest: string;
  /** When its first trigger fired, in epoch ms. */
  readonly createdAtMs: number;
  /** False when the snapshot cannot take more `source_details` (e.g. recovered from a compressed file). */
  readonly open: boolean;
}

/** sha256 of a material text (see `materialText`). */
export function materialDigest(material: string): Promise<string> {
  return sha256Hex(material);
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
 */
export function shouldCoalesce(base: CoalesceBase | undefined, digest: string, at: number, windowMs: number): boolean {
  if (!base || !base.open) return false;
  const elapsed = at - base.createdAtMs;
  return base.digest === digest && elapsed >= 0 && elapsed <= windowMs;
}
