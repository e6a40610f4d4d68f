import { CheckpointError } from '../../contract/errors.js';
import { listDirectory, unexpected } from './contents.js';
import { dirOf, encodeRepoPath, type RepoContext } from './context.js';
import type { KnownHead } from './head-state.js';
import { treeDirectory } from './listing.js';

interface CommitJson {
  readonly sha?: string;
  readonly commit?: { readonly tree?: { readonly sha?: string } };
  readonly files?: readonly { readonly filename?: string; readonly status?: string; readonly sha?: string | null }[];
}

/** A file in a commit's diff: `added`, `modified` or `removed`, and its blob sha. */
export interface CommitFile {
  readonly status: string;
  readonly sha: string | null;
}

/** Reads the branch head (commit and tree) in one request; `'empty'` for a repository without commits. */
export async function readHead(ctx: RepoContext): Promise<KnownHead | 'empty'> {
  const res = await ctx.http.request({
    method: 'GET',
    path: `${ctx.repoPath}/commits/${encodeRepoPath(`heads/${ctx.branch}`)}`,
    query: { per_page: '1' },
    operation: 'repos/get-commit',
    idempotent: true,
  });
  if (res.status === 409) return 'empty';
  if (res.status !== 200) {
    throw new CheckpointError(
      'checkpoint_storage_unavailable',
      `branch ${ctx.branch} cannot be read (${res.status}${res.message ? `: ${res.message}` : ''}); create it first`,
      {
        details: { operation: 'repos/get-commit', status: res.status },
      },
    );
  }
  const json = res.json as CommitJson;
  if (!json.sha || !json.commit?.tree?.sha) throw unexpected('repos/get-commit', res.status, 'no sha in the answer');
  const head: KnownHead = { commit: json.sha, tree: json.commit.tree.sha, atMs: ctx.clock.now() };
  ctx.state.setHead(head, ctx.state.head?.commit === head.commit);
  return head;
}

/** Lists the directories of `paths` in `head` that the head state does not know yet. */
export async function ensureListings(ctx: RepoContext, head: KnownHead, paths: readonly string[]): Promise<void> {
  const dirs = [...new Set(paths.map(dirOf))].filter((d) => ctx.state.listing(d) === undefined);
  for (const dir of dirs) {
    ctx.state.setListing(dir, await listDirectory(ctx, dir, head.commit, (d) => treeDirectory(ctx, head.tree, d)));
  }
}

/** The files a commit changed, by path (read by its sha: never stale). */
export async function commitFiles(ctx: RepoContext, commit: string): Promise<Map<string, CommitFile>> {
  const files = new Map<string, CommitFile>();
  for (let page = 1; page <= 10; page++) {
    const res = await ctx.http.request({
      method: 'GET',
      path: `${ctx.repoPath}/commits/${commit}`,
      query: { per_page: '300', page: String(page) },
      operation: 'repos/get-commit',
      idempotent: true,
    });
    if (res.status !== 200) throw unexpected('repos/get-commit', res.status, res.message);
    const list = (res.json as CommitJson).files ?? [];
    for (const f of list) if (f.filename) files.set(f.filename, { status: f.status ?? '', sha: f.sha ?? null });
    if (list.length < 300) break;
  }
  return files;
}
