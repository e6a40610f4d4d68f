import { CheckpointError } from '../../contract/errors.js';
import type { PlannedEntry, TreeEntry } from './commit-plan.js';
import { resetMerges, type CommitOptions, type CommitRun, type Prepared } from './commit-run.js';
import { MAX_ATTEMPTS, raceBackoff, sendWrite, unexpected } from './contents.js';
import { encodeRepoPath, type RepoContext } from './context.js';
import { toBase64 } from '../../codec/base64.js';
import type { KnownHead } from './head-state.js';

/** The planned entries with their blobs uploaded, in order; a blob GitHub stores under another sha is sent again. */
export async function uploadBlobs(ctx: RepoContext, planned: readonly PlannedEntry[]): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  for (const e of planned) {
    if ('entry' in e) {
      entries.push(e.entry);
      continue;
    }
    const p = e.upload;
    let blob: string | undefined;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS && blob !== p.expected; attempt++) {
      const res = await ctx.http.request({
        method: 'POST',
        path: `${ctx.repoPath}/git/blobs`,
        body: { content: toBase64(p.bytes!), encoding: 'base64' },
        operation: 'git/create-blob',
        idempotent: true,
      });
      if (res.status !== 201) throw unexpected('git/create-blob', res.status, res.message);
      blob = (res.json as { sha?: string }).sha;
      if (blob !== p.expected) ctx.emit({ type: 'verify_retry', level: 'warn', attempt, keys: [p.op.key] });
    }
    if (blob !== p.expected)
      throw new CheckpointError('checkpoint_atomic_write_failed', `blob of ${p.op.key} did not verify`, { details: { key: p.op.key } });
    entries.push({ path: p.path, mode: '100644', type: 'blob', sha: blob });
  }
  return entries;
}

/** Creates the tree on top of `head` and the commit holding it (invisible until the branch points at it). */
export async function createCommitObject(
  ctx: RepoContext,
  head: KnownHead,
  entries: readonly TreeEntry[],
  items: readonly Prepared[],
  options: CommitOptions,
): Promise<{ tree: string; commit: string }> {
  const treeRes = await ctx.http.request({
    method: 'POST',
    path: `${ctx.repoPath}/git/trees`,
    body: { base_tree: head.tree, tree: entries },
    operation: 'git/create-tree',
    idempotent: true,
  });
  if (treeRes.status !== 201) throw unexpected('git/create-tree', treeRes.status, treeRes.message);
  const tree = (treeRes.json as { sha?: string }).sha;
  if (!tree) throw unexpected('git/create-tree', treeRes.status, 'no sha in the answer');
  const commitRes = await ctx.http.request({
    method: 'POST',
    path: `${ctx.repoPath}/git/commits`,
    body: {
      message: ctx.message({ operation: options.operation, keys: items.map((p) => p.op.key) }),
      tree,
      parents: [head.commit],
      ...(ctx.committer ? { author: { ...ctx.committer } } : {}),
    },
    operation: 'git/create-commit',
    idempotent: true,
  });
  if (commitRes.status !== 201) throw unexpected('git/create-commit', commitRes.status, commitRes.message);
  const commit = (commitRes.json as { sha?: string }).sha;
  if (!commit) throw unexpected('git/create-commit', commitRes.status, 'no sha in the answer');
  return { tree, commit };
}

/**
 * Points the branch at `commit` (a fast forward, never forced): resolves the sha the ref
 * now names, `'lost'` when the answer was lost (the commit may have landed), or `'raced'`
 * when another commit won the race (either way the run is set up for the next attempt).
 */
export async function moveBranch(
  ctx: RepoContext,
  run: CommitRun,
  commit: string,
): Promise<{ moved: string | undefined } | 'lost' | 'raced'> {
  run.sent++;
  const refRes = await sendWrite(ctx, run.lost, {
    method: 'PATCH',
    path: `${ctx.repoPath}/git/refs/${encodeRepoPath(`heads/${ctx.branch}`)}`,
    body: { sha: commit, force: false },
    operation: 'git/update-ref',
    idempotent: false,
  });
  if (refRes === undefined) {
    run.lastLost = new CheckpointError('checkpoint_storage_unavailable', 'the ref update got no answer');
    run.ambiguous = true;
    // The commit may have landed: reads must no longer prefer this process's earlier writes of these paths.
    ctx.state.forgetOwnWrites(run.items.map((p) => p.path));
    run.conditionsChecked = false;
    ctx.state.invalidate();
    return 'lost';
  }
  if (refRes.status === 422 && /fast.forward/i.test(refRes.message)) {
    if (++run.races > ctx.maxConflictRetries || run.sent >= ctx.maxWriteAttempts) {
      throw new CheckpointError(
        'checkpoint_conflict',
        `the branch kept moving: ${run.races} commits of ${run.keys.length} keys lost the race`,
        {
          details: { keys: run.keys.slice(0, 20), attempts: run.sent, attemptsExhausted: true },
        },
      );
    }
    ctx.emit({ type: 'conflict_retry', level: 'info', attempt: run.races, reason: 'not_fast_forward', keys: run.keys });
    ctx.state.invalidate();
    await raceBackoff(ctx, run.races);
    run.conditionsChecked = false;
    await resetMerges(run);
    return 'raced';
  }
  if (refRes.status !== 200) throw unexpected('git/update-ref', refRes.status, refRes.message);
  return { moved: (refRes.json as { object?: { sha?: string } }).object?.sha };
}
