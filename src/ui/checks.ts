/** Verify and resume, as the run view's panels show them. */
import { isCheckpointError } from '../contract/errors.js';
import { planResume } from '../resume/plan-resume.js';
import { loadEntry, loadRunSnapshots } from '../runs/inspect.js';
import { errorView, runFiles, type ErrorView, type ViewerSource } from './source.js';
import { decodeRunIndex } from '../codec/run-index.js';
import type { RunFiles } from '../snapshot-io/run-files.js';

/** The findings of checking one run's files, as `savepoint verify` reports them. */
export interface VerifyView {
  readonly runId: string;
  readonly checked: number;
  readonly problems: readonly (ErrorView & { readonly key: string })[];
}

/** The run index's problem, when it cannot be decoded or names another run (a copied folder); `undefined` when sound or absent. */
async function indexProblem(source: ViewerSource, run: RunFiles): Promise<(ErrorView & { readonly key: string }) | undefined> {
  if (!run.index) return undefined;
  const key = run.index.key;
  try {
    const stored = await source.storage.get(key);
    const index = stored ? decodeRunIndex(stored.bytes, key) : undefined;
    if (index && index.run_id !== run.runId)
      return {
        key,
        reasonCode: 'checkpoint_schema_invalid',
        message: `the index names run "${index.run_id}", its place names run "${run.runId}"`,
      };
  } catch (err) {
    if (isCheckpointError(err)) return { key, ...errorView(err) };
    throw err;
  }
  return undefined;
}

/**
 * Decodes and verifies every file of a run (history, batches, latest, index). It counts files
 * as `savepoint verify` does — a batch file is one file however many snapshots it holds, and
 * the index counts — so the page and the CLI give the same number for the same run.
 */
export async function verifyRun(source: ViewerSource, runId: string): Promise<VerifyView | undefined> {
  const run = await runFiles(source, runId);
  if (!run) return undefined;
  const rows = await loadRunSnapshots(source.storage, source.profile, run);
  const latest =
    run.latest && (run.history.length > 0 || run.batches.length > 0) ? [await loadEntry(source.storage, source.profile, run.latest)] : [];
  const index = await indexProblem(source, run);
  const problems = [...rows, ...latest].filter((r) => r.error).map((r) => ({ key: r.key, ...errorView(r.error!) }));
  return {
    runId,
    checked: run.history.length + run.batches.length + (run.latest ? 1 : 0) + (run.index ? 1 : 0),
    problems: index ? [...problems, index] : problems,
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
      skipped: plan.skipped.map((s) => ({ key: s.key, kind: s.kind, reasonCode: s.reasonCode, message: s.message, issue: s.issue })),
    };
  } catch (err) {
    if (isCheckpointError(err)) return { ok: false, error: errorView(err) };
    throw err;
  }
}
