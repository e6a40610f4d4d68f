import { CheckpointError } from '../contract/errors.js';
import { calendarBucketer } from './calendar.js';
import type { RetentionInventory } from './inventory.js';
import type { PlanRetentionOptions } from './plan.js';
import { resolveRetentionPolicy, type ResolvedRetentionPolicy, type ResolvedRule } from './policy.js';
import { type RetentionPolicy } from '../contract/retention-policy.js';

/** The policy's `run-tiers` rule, resolved. */
export type TiersRule = Extract<ResolvedRule, { rule: 'run-tiers' }>;
type PreserveRule = Extract<ResolvedRule, { rule: 'preserve-runs' }>;

/** What planning settles once, before any run: the resolved policy, the options and the store-wide facts. */
export interface PlanContext {
  readonly inventory: RetentionInventory;
  readonly resolved: ResolvedRetentionPolicy;
  readonly rules: readonly ResolvedRule[];
  /** Planning time, epoch ms. */
  readonly now: number;
  readonly opts: Required<PlanRetentionOptions>;
  readonly tiers: TiersRule | undefined;
  /** The reason name of each bit, in bit order (rule names from `RULE_SHIFT` on). */
  readonly bitNames: readonly string[];
  /** The bucketer of each `keep-calendar` rule, by rule position. */
  readonly bucketers: readonly (((ms: number) => number) | undefined)[];
  /** History may be compressed: the profile compresses and the policy says when. */
  readonly compressOk: boolean;
  /** Compress a snapshot when `createdAtMs <= compressBefore`. */
  readonly compressBefore: number;
  /** The runs `preserved_runs.json` lists. */
  readonly preservedFile: ReadonlySet<string>;
  readonly preserveRules: readonly PreserveRule[];
  /** A policy without rules keeps everything. */
  readonly noRules: boolean;
}

/** Checks `now`, resolves the policy and the options. Throws `checkpoint_config_invalid` for an invalid policy or `now`. */
export function planContext(
  inventory: RetentionInventory,
  policy: RetentionPolicy,
  now: number,
  options: PlanRetentionOptions,
): PlanContext {
  if (!Number.isFinite(now))
    throw new CheckpointError('checkpoint_config_invalid', 'planRetention: now must be epoch milliseconds', { details: { field: 'now' } });
  const resolved = resolveRetentionPolicy(policy);
  const opts: Required<PlanRetentionOptions> = {
    allowRunDeletion: options.allowRunDeletion ?? false,
    deleteUnreadable: options.deleteUnreadable ?? false,
  };
  const rules = resolved.rules;
  const tiers = rules.find((r): r is TiersRule => r.rule === 'run-tiers');
  const tierName = tiers?.name ?? 'run-tier';
  const bitNames = [
    'latest',
    'newest',
    'preserved-run',
    'preserved-runs-unreadable',
    'no-rules',
    `${tierName}-recent`,
    `${tierName}-final`,
    'batch-member-kept',
  ];
  rules.forEach((r) => bitNames.push(r.name));
  return {
    inventory,
    resolved,
    rules,
    now,
    opts,
    tiers,
    bitNames,
    bucketers: rules.map((r) => (r.rule === 'keep-calendar' ? calendarBucketer(r.unit, r.timeZone) : undefined)),
    compressOk: inventory.profile.compressHistory && Number.isFinite(resolved.compressAfterMs),
    compressBefore: now - resolved.compressAfterMs,
    preservedFile: new Set(inventory.preservedRuns),
    preserveRules: rules.filter((r): r is PreserveRule => r.rule === 'preserve-runs'),
    noRules: rules.length === 0,
  };
}

/** The reason names of a mask of reason bits, each mask's list made (and frozen) once. */
export function reasonNamer(bitNames: readonly string[]): (mask: number) => readonly string[] {
  const reasonCache = new Map<number, readonly string[]>();
  return (mask) => {
    let out = reasonCache.get(mask);
    if (!out) {
      const names: string[] = [];
      for (let b = 0; b < bitNames.length; b++) if (mask & (1 << b)) names.push(bitNames[b]!);
      out = Object.freeze([...new Set(names)]);
      reasonCache.set(mask, out);
    }
    return out;
  };
}
