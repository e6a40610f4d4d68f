import type { InventorySnapshot } from './inventory.js';
import type { RetentionAction } from './plan.js';

// Reason bits: why a snapshot is kept, one bit each. Safety and tier reasons first, then one
// bit per policy rule (bit `RULE_SHIFT + k` for the policy's rule k).
export const B_LATEST = 1 << 0;
export const B_NEWEST = 1 << 1;
export const B_PRESERVED = 1 << 2;
export const B_PRESERVED_UNREADABLE = 1 << 3;
export const B_NO_RULES = 1 << 4;
export const B_TIER_RECENT = 1 << 5;
export const B_TIER_FINAL = 1 << 6;
export const B_BATCH = 1 << 7;
export const RULE_SHIFT = 8;

// Action codes, as the planner stores them (one byte per snapshot); `ACTIONS[code]` names them.
export const ACTIONS: readonly RetentionAction[] = ['keep', 'compress', 'summarize', 'delete'];
export const A_KEEP = 0;
export const A_COMPRESS = 1;
export const A_SUMMARIZE = 2;
export const A_DELETE = 3;

export const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The plain (not yet compressed) history file of a snapshot, if any. */
export function plainFile(s: InventorySnapshot): InventorySnapshot['files'][number] | undefined {
  for (const f of s.files) if (!f.compressed) return f;
  return undefined;
}
