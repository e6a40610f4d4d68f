/** Verify and resume, as the run view's panels show them. */
import { isCheckpointError } from '../contract/errors.js';
import { planResume } from '../resume/plan-resume.js';
import { loadEntry, loadRunSnapshots } from '../runs/inspect.js';
import { errorView, runFiles, type ErrorView, type ViewerSource } from './source.js';

/** The findings of checking one run's files, as `savepoint verify` reports them. */
export interface VerifyView {
  readonly runId: string;
  readonly checked: number;
  readonly problems: readonly (ErrorView & { readonly key: string })[];
}

/** Decodes and verifies every snapshot file of a run (history, batches, latest). */
export async function verifyRun(source: ViewerSource, runId: string): Promise<VerifyView | undefined> {
  const run = await runFiles(source, runId);
  if (!run) return undefined;
  const rows = await loadRunSnapshots(source.storage, source.profile, run);
  const latest =
    run.latest && (run.history.length > 0 || run.batches.length > 0) ? [await loadEntry(source.storage, source.profile, run.latest)] : [];
  const all = [...rows, ...latest];
  return {
    runId,
    checked: all.length,
    problems: all.filter((r) => r.error).map((r) => ({ key: r.key, ...errorView(r.error!) })),
  };
}

/** Where a run would resume and why, or why it cannot. */
export async function resumeView(source: ViewerSource, runId: string): Promise<Record<string, unknown>> {
  source.profile.assertRunId(runId);
  try {
    const plan = await planResume({ storage: source.storage, profile: source.profile, runId, clock: source.clock });
    return {
      ok: true,
      at: plan.at,
      reason: plan.reason,
      explanation: plan.explanation,
      eligible: plan.eligible,
      completed: plan.completed,
      remaining: plan.remaining,
      sequence: plan.snapshot.sequence,
      snapshotId: plan.snapshot.id,
      status: plan.snapshot.status,
      source: plan.source,
      nextSequence: plan.nextSequence,
      ageMs: plan.ageMs,
      warnings: plan.warnings.map((w) => ({ code: w.code, message: w.message })),
      skipped: plan.skipped.map((s) => ({ key: s.key, kind: s.kind, reasonCode: s.reasonCode, message: s.message })),
    };
  } catch (err) {
    if (isCheckpointError(err)) return { ok: false, error: errorView(err) };
    throw err;
  }
}
