import { CheckpointError } from '../../contract/errors.js';
import { readBackOf, type PathChange, type TreeEntry, type TreePlan } from './commit-plan.js';
import { commitFiles, type CommitFile } from './commit-reads.js';
import { landedPaths, rewriteOf, type CommitRun, type Prepared } from './commit-run.js';
import { beforeAttempt, rememberUnverified, wroteOf } from './commit-unverified.js';
import { MAX_ATTEMPTS, rememberDamage } from './contents.js';
import type { RepoContext } from './context.js';
import { restore, type RestorePath } from './restore.js';

/** One landed attempt: its commit, the tree entries it wrote, and the plan they came from. */
export interface LandedAttempt {
  readonly commit: string;
  /** The sha the branch names now, as the ref update answered. */
  readonly moved: string | undefined;
  readonly entries: readonly TreeEntry[];
  readonly plan: TreePlan;
}

/**
 * Write-then-verify: reads the commit back by its sha and compares every blob sha (or, with
 * `verify: 'sha'`, trusts the ref update's answer). Resolves what did not verify and the
 * changes as stored.
 */
export async function verifyCommit(
  ctx: RepoContext,
  run: CommitRun,
  landed: LandedAttempt,
): Promise<{ bad: Prepared[]; changes: readonly PathChange[] }> {
  const { commit, entries, plan } = landed;
  if (ctx.verify === 'read-back') {
    let files: Map<string, CommitFile>;
    try {
      files = await commitFiles(ctx, commit);
    } catch (err) {
      // Landed, not verified: the batch sent again reads this commit back first.
      rememberUnverified(ctx, run.print, {
        commit,
        before: beforeAttempt(run, plan),
        written: new Set(entries.map((e) => e.path)),
        wrote: wroteOf(run, entries),
      });
      ctx.state.invalidate();
      throw err;
    }
    // The commit landed either way: our listings now describe it, with what GitHub actually stored.
    return readBackOf(run.items, entries, plan, files);
  }
  return { bad: landed.moved !== commit ? run.items.filter((p) => p.op.type === 'put') : [], changes: plan.changes };
}

/**
 * A landed attempt stored `bad` otherwise than sent: rewrites only those (their conditions
 * were already met), or, out of attempts, puts the paths back and fails.
 */
export async function retryUnverified(
  ctx: RepoContext,
  run: CommitRun,
  damage: { paths: RestorePath[] },
  bad: readonly Prepared[],
  changes: readonly PathChange[],
): Promise<void> {
  // Put back if a later attempt fails otherwise (a lost race, a lost answer): only where this batch's blob still is.
  const left = new Map(changes.map((c) => [c.path, c.sha]));
  damage.paths = landedPaths(run, bad, ctx.verify === 'read-back' ? left : undefined);
  if (++run.verifyFailures >= MAX_ATTEMPTS || run.sent >= ctx.maxWriteAttempts) {
    const damaged = damage.paths;
    damage.paths = []; // restored here, and the failure says whether it worked
    // Do not leave what GitHub mangled in place (a damaged latest.json would hide the good
    // one), nor the rest of a batch that failed: point the paths back at the blobs they held
    // before this batch, by sha.
    const restored = await restore(ctx, landedPaths(run, bad));
    // Left in place (a rate limit, a head that kept moving): the caller's next write of these
    // paths replaces it, instead of conflicting with it (a create-only checkpoint file above all).
    if (!restored) rememberDamage(ctx, damaged);
    throw new CheckpointError('checkpoint_atomic_write_failed', `commit of ${bad.length} keys did not verify after ${run.sent} attempts`, {
      details: { keys: bad.map((p) => p.op.key).slice(0, 20), attempts: run.sent, attemptsExhausted: true, restored },
    });
  }
  ctx.emit({ type: 'verify_retry', level: 'warn', attempt: run.verifyFailures, keys: bad.map((p) => p.op.key) });
  run.items = rewriteOf(bad);
  run.conditionsChecked = true;
}
