/** The retention dry run drawn on a timeline, and applying exactly the plan that was shown. */
import { canonicalJson } from '../codec/canonical-json.js';
import { sha256Hex } from '../codec/sha256.js';
import { applyRetention } from '../retention/apply.js';
import { buildInventory } from '../retention/inventory.js';
import { planRetention, type RetentionPlan } from '../retention/plan.js';
import type { ViewerSource } from './source.js';

/** One snapshot's retention decision. */
export interface RetentionDecisionView {
  readonly sequence: number;
  readonly id: string;
  readonly action: 'keep' | 'compress' | 'summarize' | 'delete';
  readonly reasons: readonly string[];
}

/** A retention dry run as the page draws it. */
export interface RetentionView {
  readonly policy: string;
  readonly rules: readonly string[];
  /** Identifies this exact plan: applying needs it, so what is applied is what was shown. */
  readonly digest: string;
  readonly runs: readonly {
    readonly runId: string;
    readonly tier: string | null;
    readonly counts: Readonly<Record<string, number>>;
    readonly deleteRun: boolean;
  }[];
  /** Decisions of the asked run's snapshots (all runs' counts are in `runs`). */
  readonly decisions: readonly RetentionDecisionView[];
  readonly operations: number;
}

async function currentPlan(source: ViewerSource): Promise<{ plan: RetentionPlan; digest: string }> {
  const policy = source.profile.retention ?? { name: 'none', rules: [] };
  const inventory = await buildInventory({ storage: source.storage, profile: source.profile });
  const plan = planRetention(inventory, policy, source.clock.now());
  // The digest covers what the plan would do, not when it was made.
  const digest = await sha256Hex(canonicalJson(plan.operations as unknown as Parameters<typeof canonicalJson>[0]));
  return { plan, digest };
}

/** The profile's retention policy planned over the whole store, with one run's decisions. */
export async function retentionView(source: ViewerSource, runId?: string): Promise<RetentionView> {
  if (runId !== undefined) source.profile.assertRunId(runId);
  const { plan, digest } = await currentPlan(source);
  return {
    policy: plan.policy,
    rules: plan.rules,
    digest,
    runs: plan.runs.map((r) => ({ runId: r.runId, tier: r.tier ?? null, counts: r.counts, deleteRun: r.deleteRun })),
    decisions: plan.snapshots
      .filter((d) => d.snapshot.runId === runId)
      .map((d) => ({ sequence: d.snapshot.sequence, id: d.snapshot.id, action: d.action, reasons: d.reasons })),
    operations: plan.operations.length,
  };
}

/** Applies the current retention plan if it is still the one with `digest`; `undefined` when it changed. */
export async function applyRetentionPlan(source: ViewerSource, digest: string): Promise<Record<string, unknown> | undefined> {
  const { plan, digest: now } = await currentPlan(source);
  if (now !== digest) return undefined;
  const report = await applyRetention({ storage: source.storage, profile: source.profile, plan, clock: source.clock });
  return { applied: plan.operations.length, report: JSON.parse(JSON.stringify(report)) as unknown };
}
