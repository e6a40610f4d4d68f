import { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { conditionsHold } from './commit-conditions.js';
import { planTree } from './commit-plan.js';
import { ensureListings, readHead } from './commit-reads.js';
import { outcomesOf, startCommitRun, type CommitOptions, type CommitRun } from './commit-run.js';
import { createCommitObject, moveBranch, uploadBlobs } from './commit-send.js';
import { rememberLost, settleEarlierAttempt } from './commit-unverified.js';
import { retryUnverified, verifyCommit } from './commit-verify.js';
import type { RepoContext } from './context.js';
import type { KnownHead } from './head-state.js';
import { initEmptyRepository } from './init-repository.js';
import type { RestorePath } from './restore.js';

/**
 * The attempts of {@link commitOperations}; `damage.paths` names what a landed attempt left
 * unverified. Each attempt: the head, what earlier attempts left, the conditions, the tree
 * plan, the blobs, tree and commit, the ref update, then the read-back.
 */
export async function commitAttempts(
  ctx: RepoContext,
  ops: readonly BatchOperation[],
  options: CommitOptions,
  damage: { paths: RestorePath[] },
): Promise<BatchOutcome[]> {
  const run = await startCommitRun(ctx, ops, options);
  for (;;) {
    const current = await headForAttempt(ctx);
    if (current === undefined) continue; // the empty repository got its first commit: read the head again
    const { head, fresh } = current;
    await ensureListings(
      ctx,
      head,
      run.items.map((p) => p.path),
    );
    if (await settleEarlierAttempt(ctx, run, head, damage)) return outcomesOf(run);
    // Conditions, against the listings of this head (a failure on a cached head reads a fresh one).
    if (!run.conditionsChecked && !(await conditionsHold(ctx, run, fresh))) continue;
    assertAttemptsLeft(ctx, run);

    const plan = planTree(ctx, run.items);
    for (const [p, existed] of plan.existed) p.existed = existed;
    const entries = await uploadBlobs(ctx, plan.entries);
    if (entries.length === 0) {
      ctx.state.recordOwnWrites(head.commit, ctx.clock.now(), plan.changes);
      return outcomesOf(run);
    }
    const { tree, commit } = await createCommitObject(ctx, head, entries, run.items, options);
    const ref = await moveBranch(ctx, run, commit);
    if (ref === 'lost') rememberLost(ctx, run, { commit, parent: head.commit, entries, plan });
    if (ref === 'lost' || ref === 'raced') continue;

    const { bad, changes } = await verifyCommit(ctx, run, { commit, moved: ref.moved, entries, plan });
    ctx.state.setHead({ commit, tree, atMs: ctx.clock.now() }, true);
    ctx.state.applyChanges(changes);
    ctx.state.recordOwnWrites(commit, ctx.clock.now(), changes);
    if (run.verifyFailures === 0) for (const [path, sha] of plan.before) run.original.set(path, sha);
    if (bad.length === 0) return outcomesOf(run);
    await retryUnverified(ctx, run, damage, bad, changes);
  }
}

/** The head to build on: the cached one, else read (`fresh`); undefined after giving an empty repository its first commit. */
async function headForAttempt(ctx: RepoContext): Promise<{ head: KnownHead; fresh: boolean } | undefined> {
  const cached = ctx.state.head;
  if (cached) return { head: cached, fresh: false };
  const read = await readHead(ctx);
  if (read === 'empty') {
    await initEmptyRepository(ctx);
    return undefined;
  }
  return { head: read, fresh: true };
}

/** Fails once every write attempt was sent; only lost answers get here (races and failed verifications stop where they happen). */
function assertAttemptsLeft(ctx: RepoContext, run: CommitRun): void {
  if (run.sent < ctx.maxWriteAttempts) return;
  throw new CheckpointError(
    'checkpoint_storage_unavailable',
    `commit of ${run.keys.length} keys got no answer in ${run.sent} attempts${run.lastLost ? ` (${run.lastLost.message})` : ''}`,
    {
      details: { keys: run.keys.slice(0, 20), attempts: run.sent, attemptsExhausted: true, ambiguous: true },
    },
  );
}
