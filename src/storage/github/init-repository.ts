import { unexpected } from './contents.js';
import { encodeRepoPath, type RepoContext } from './context.js';
import { toBase64 } from '../../codec/base64.js';
import { isAmbiguous } from './http.js';

/**
 * The file that gives an empty repository its first commit. The Git Data API refuses
 * every call on an empty repository (409 "Git Repository is empty."), so the first
 * commit goes through the contents API; a multi-file batch needs that first commit to
 * exist before it can commit atomically on top of it.
 */
export const INIT_MARKER_PATH = '.savepoint-init';

/** Gives an empty repository its first commit (a marker file) through the contents API. */
export async function initEmptyRepository(ctx: RepoContext): Promise<void> {
  try {
    const res = await ctx.http.request({
      method: 'PUT',
      path: `${ctx.repoPath}/contents/${encodeRepoPath(INIT_MARKER_PATH)}`,
      body: {
        message: ctx.message({ operation: 'init', keys: [] }),
        content: toBase64(new TextEncoder().encode('This repository holds savepoint checkpoints.\n')),
        branch: ctx.branch,
        ...(ctx.committer ? { committer: { ...ctx.committer } } : {}),
      },
      operation: 'repos/create-or-update-file-contents',
      idempotent: false,
    });
    // 422: someone else initialised it meanwhile, which is just as good.
    if (res.status !== 200 && res.status !== 201 && res.status !== 422)
      throw unexpected('repos/create-or-update-file-contents', res.status, res.message);
  } catch (err) {
    if (!isAmbiguous(err)) throw err;
  }
  ctx.state.invalidate();
}
