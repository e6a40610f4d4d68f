import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import { mergeRunIndexBytes } from './conflicts.js';
import { isOwnDamage, readBlob } from './contents.js';
import { ownUnverifiedWrite } from './commit-unverified.js';
import { resetMerges, type CommitRun, type Prepared } from './commit-run.js';
import type { RepoContext } from './context.js';
import { gitBlobSha } from './git-blob.js';

/**
 * Checks the conditions against the listings of this head. A run index that lost its
 * condition is merged with the stored one instead. Resolves false when a cached head failed
 * them (it is dropped, and the merges undone: the caller checks again on a fresh head);
 * throws the failure when the head was fresh.
 */
export async function conditionsHold(ctx: RepoContext, run: CommitRun, fresh: boolean): Promise<boolean> {
  let failure: CheckpointError | undefined;
  let failed: Prepared | undefined;
  for (const p of run.items) {
    failure = await conditionOf(ctx, p);
    if (failure) {
      failed = p;
      break;
    }
  }
  if (failure) {
    // A cached head may be behind the branch: judge only against a fresh one.
    if (!fresh) {
      ctx.state.invalidate();
      await resetMerges(run);
      return false;
    }
    // Another writer replaced what this adapter wrote there: reads must show theirs now.
    ctx.state.forgetOwnWrites([failed!.path]);
    throw failure;
  }
  return true;
}

/** The failure of `p`'s condition, or undefined when it holds (or a merge made it hold). */
async function conditionOf(ctx: RepoContext, p: Prepared): Promise<CheckpointError | undefined> {
  const found = ctx.state.fileAt(p.path);
  // A directory holds no value: a check sees the key as absent (nothing can be written there anyway).
  const cur = p.op.type === 'check' && found && found.type !== 'file' ? null : found;
  if (cur && cur.type !== 'file') {
    throw new CheckpointError('checkpoint_unsupported', `${p.op.key} is a directory in the repository; git cannot hold a value there`, {
      details: { key: p.op.key },
    });
  }
  const { op } = p;
  const createOnly = (op.type === 'put' || op.type === 'check') && op.ifAbsent === true;
  const stale = (createOnly && cur) || (op.ifVersion !== undefined && cur?.sha !== op.ifVersion);
  if (!stale) return undefined;
  if (cur && isOwnDamage(ctx, p.path, cur.sha)) return undefined; // our own damaged write, not another writer's: replaced now
  // Our own landed write of these very bytes, its answer lost: nothing to write there again.
  if (op.type === 'put' && cur && cur.sha === p.expected && ownUnverifiedWrite(ctx, p.path, cur.sha)) return undefined;
  if (op.type === 'put' && cur && ctx.mergeRunIndexes) {
    const theirs = await readBlob(ctx, cur.sha);
    const base = op.ifVersion !== undefined ? await readBlob(ctx, op.ifVersion) : undefined;
    const merged = theirs ? mergeRunIndexBytes(op.bytes, base, theirs) : undefined;
    if (merged) {
      ctx.emit({ type: 'index_merged', level: 'info', key: op.key });
      p.bytes = merged;
      p.expected = await gitBlobSha(merged);
      return undefined;
    }
  }
  return conditionFailed(op.key, cur ? (createOnly ? 'key exists' : 'version changed') : 'key is gone');
}
