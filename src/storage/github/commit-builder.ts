import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { commitAttempts } from './commit-attempts.js';
import type { CommitOptions } from './commit-run.js';
import { forgetDamage, restoringOnFailure } from './contents.js';
import type { RepoContext } from './context.js';
import type { RestorePath } from './restore.js';

/** Applies `ops` in one commit on top of the branch head; the heart of `batch()`. */
export async function commitOperations(
  ctx: RepoContext,
  ops: readonly BatchOperation[],
  options: CommitOptions = { operation: 'batch' },
): Promise<BatchOutcome[]> {
  const damage = { paths: [] as RestorePath[] };
  const outcomes = await restoringOnFailure(
    ctx,
    () => damage.paths,
    () => commitAttempts(ctx, ops, options, damage),
  );
  forgetDamage(
    ctx,
    ops.map((op) => ctx.toPath(op.key)),
  );
  return outcomes;
}
