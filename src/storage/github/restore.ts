import { ensureListings, readHead } from './commit-reads.js';
import { MAX_ATTEMPTS, sendWrite } from './contents.js';
import { encodeRepoPath, type RepoContext } from './context.js';

/** A path a landed write left damaged: what it held before (`sha`), and the blob the write left there (`left`), when known. */
export interface RestorePath {
  readonly path: string;
  readonly sha: string | null;
  readonly left?: string | null;
}

/**
 * Points `paths` back at the blobs they held (or removes them), by sha, in one commit on
 * the current head. A path that no longer holds what the damaged write `left` there (another
 * writer replaced it since) is left alone. A head that moves meanwhile, or a ref update whose
 * answer is lost, is read again, up to `MAX_ATTEMPTS` commits: a corrupt write must not stay
 * in place as the newest file because the head kept moving or one answer got lost. Best
 * effort: resolves whether the paths are restored.
 */
export async function restore(ctx: RepoContext, paths: readonly RestorePath[]): Promise<boolean> {
  const lost = { count: 0 };
  try {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      if (attempt > 1) ctx.state.invalidate();
      const head = ctx.state.head ?? (await readHead(ctx));
      if (head === 'empty') return false;
      await ensureListings(
        ctx,
        head,
        paths.map((p) => p.path),
      );
      const tree = paths
        .filter((p) => {
          const now = ctx.state.fileAt(p.path)?.sha ?? null;
          return now !== p.sha && (p.left === undefined || now === p.left);
        })
        .map((p) => ({ path: p.path, mode: '100644', type: 'blob', sha: p.sha }));
      if (tree.length === 0) return true;
      const treeRes = await ctx.http.request({
        method: 'POST',
        path: `${ctx.repoPath}/git/trees`,
        body: { base_tree: head.tree, tree },
        operation: 'git/create-tree',
        idempotent: true,
      });
      const treeSha = (treeRes.json as { sha?: string } | undefined)?.sha;
      if (treeRes.status !== 201 || !treeSha) return false;
      const commitRes = await ctx.http.request({
        method: 'POST',
        path: `${ctx.repoPath}/git/commits`,
        body: { message: 'savepoint: restore files whose write did not verify', tree: treeSha, parents: [head.commit] },
        operation: 'git/create-commit',
        idempotent: true,
      });
      const commitSha = (commitRes.json as { sha?: string } | undefined)?.sha;
      if (commitRes.status !== 201 || !commitSha) return false;
      const ref = await sendWrite(ctx, lost, {
        method: 'PATCH',
        path: `${ctx.repoPath}/git/refs/${encodeRepoPath(`heads/${ctx.branch}`)}`,
        body: { sha: commitSha, force: false },
        operation: 'git/update-ref',
        idempotent: false,
      });
      ctx.state.invalidate();
      // No answer: the next attempt reads the head again, and finds the paths put back if it landed.
      if (ref === undefined) continue;
      if (ref.status === 200) return true;
      if (!(ref.status === 422 && /fast.forward/i.test(ref.message))) return false;
    }
    return false;
  } catch {
    ctx.state.invalidate();
    return false;
  } finally {
    // Whatever happened, the bad content is no longer "what this process wrote".
    ctx.state.forgetOwnWrites(paths.map((p) => p.path));
  }
}
