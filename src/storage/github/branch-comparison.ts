import { unexpected } from './contents.js';
import { encodeRepoPath, type RepoContext } from './context.js';

/**
 * How the branch relates to one of this adapter's own commits, from GitHub's compare API.
 * Read-your-writes needs it when the branch shows another blob at a path this adapter wrote
 * recently: a lagging replica and another writer's newer commit look the same otherwise.
 */
export interface BranchComparison {
  /**
   * `lags`: the branch is behind our commit (a replica that has not seen it yet);
   * `contains`: the branch is our commit or descends from it;
   * `rewritten`: the branch no longer descends from our commit (diverged, or the commit is gone).
   */
  readonly relation: 'lags' | 'contains' | 'rewritten';
  /** With `contains`: the files the branch changed since our commit, by path: their blob sha, null when removed. */
  readonly changed: ReadonlyMap<string, string | null>;
  /** Whether `changed` lists every changed file (GitHub lists at most 300). */
  readonly complete: boolean;
}

/** What a read should answer at a path this adapter wrote, when the branch showed another blob there. */
export type OwnWriteVerdict =
  /** Our own write: the branch (or the read of it) lags behind it. */
  | { readonly kind: 'ours' }
  /** The branch's file as read: a newer one replaced ours, or the branch was rewritten. */
  | { readonly kind: 'branch' }
  /** This blob (null: no file), newer than ours: the branch holds it, though the read of the branch lagged. */
  | { readonly kind: 'blob'; readonly sha: string | null };

interface CompareJson {
  readonly status?: string;
  readonly files?: readonly {
    readonly filename?: string;
    readonly previous_filename?: string;
    readonly status?: string;
    readonly sha?: string | null;
  }[];
}

const FILES_LISTED_AT_MOST = 300;

/** Compares `commit` (base) with the branch (head): one request. */
export async function compareWithBranch(ctx: RepoContext, commit: string): Promise<BranchComparison> {
  const res = await ctx.http.request({
    method: 'GET',
    path: `${ctx.repoPath}/compare/${commit}...${encodeRepoPath(ctx.branch)}`,
    // The commit list is not needed; the changed files come on the first page whatever its size.
    query: { per_page: '1' },
    operation: 'repos/compare-commits-with-basehead',
    idempotent: true,
  });
  // Our commit unknown, or no history shared with the branch: the branch was rewritten.
  if (res.status === 404) return { relation: 'rewritten', changed: new Map(), complete: true };
  if (res.status !== 200) throw unexpected('repos/compare-commits-with-basehead', res.status, res.message);
  const json = res.json as CompareJson;
  const relation = json.status === 'behind' ? 'lags' : json.status === 'ahead' || json.status === 'identical' ? 'contains' : 'rewritten';
  const files = json.files ?? [];
  const changed = new Map<string, string | null>();
  let complete = files.length < FILES_LISTED_AT_MOST;
  for (const f of files) {
    if (!f.filename) continue;
    if (f.status === 'removed') changed.set(f.filename, null);
    else if (typeof f.sha === 'string') changed.set(f.filename, f.sha);
    else complete = false; // a changed file without its blob: judge such paths by the branch's read
    if (f.status === 'renamed' && f.previous_filename && !changed.has(f.previous_filename)) changed.set(f.previous_filename, null);
  }
  return { relation, changed, complete };
}

/**
 * Pure: what to answer at `path` given the comparison with our commit that wrote it and
 * the blob a branch-named read found there (`branchSha`, null when absent).
 */
export function judgeOwnWrite(cmp: BranchComparison, path: string, branchSha: string | null): OwnWriteVerdict {
  if (cmp.relation === 'lags') return { kind: 'ours' };
  if (cmp.relation === 'rewritten') return { kind: 'branch' };
  if (cmp.changed.has(path)) {
    const sha = cmp.changed.get(path)!;
    return sha === branchSha ? { kind: 'branch' } : { kind: 'blob', sha };
  }
  // The branch holds our commit and has not touched the path since: the read lagged.
  return cmp.complete ? { kind: 'ours' } : { kind: 'branch' };
}
