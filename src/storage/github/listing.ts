import { encodeRepoPath, type RepoContext } from './context.js';
import { unexpected } from './contents.js';
import type { KnownEntry } from './head-state.js';

interface TreeEntryJson {
  readonly path: string;
  readonly mode: string;
  readonly type: string;
  readonly sha: string;
  readonly size?: number;
}

interface TreeJson {
  readonly sha: string;
  readonly truncated: boolean;
  readonly tree: readonly TreeEntryJson[];
}

/** A file found by {@link listTree}. */
export interface ListedFile {
  readonly path: string;
  readonly sha: string;
  readonly size: number;
}

async function getTree(ctx: RepoContext, treeish: string, recursive: boolean): Promise<TreeJson | undefined> {
  const res = await ctx.http.request({
    method: 'GET',
    path: `${ctx.repoPath}/git/trees/${encodeRepoPath(treeish)}`,
    ...(recursive ? { query: { recursive: '1' } } : {}),
    operation: 'git/get-tree',
    idempotent: true,
  });
  // 409: "Git Repository is empty."; 404: no such tree or branch.
  if (res.status === 409 || res.status === 404) return undefined;
  if (res.status !== 200) throw unexpected('git/get-tree', res.status, res.message);
  return res.json as TreeJson;
}

// Regular files only: symlinks (120000) and submodules (160000) are not stored values.
const isFile = (e: TreeEntryJson): boolean => e.type === 'blob' && (e.mode === '100644' || e.mode === '100755');
const join = (dir: string, name: string): string => (dir === '' ? name : `${dir}/${name}`);

/**
 * Every file of the subtree `treeSha` (at repository path `dir`). A recursive listing
 * GitHub had to truncate (over 100,000 entries or 7 MB) is replaced, as GitHub's docs
 * advise, by fetching that level without recursion and descending into each sub-tree.
 */
async function collect(ctx: RepoContext, treeSha: string, dir: string, out: ListedFile[], knownTruncated = false): Promise<void> {
  if (!knownTruncated) {
    const full = await getTree(ctx, treeSha, true);
    if (!full) return;
    if (!full.truncated) {
      for (const e of full.tree) if (isFile(e)) out.push({ path: join(dir, e.path), sha: e.sha, size: e.size ?? 0 });
      return;
    }
  }
  const level = await getTree(ctx, treeSha, false);
  if (!level) return;
  for (const e of level.tree) {
    if (isFile(e)) out.push({ path: join(dir, e.path), sha: e.sha, size: e.size ?? 0 });
    else if (e.type === 'tree') await collect(ctx, e.sha, join(dir, e.path), out);
  }
}

/** The sha of the tree at repository path `dir` below `root` (a treeish), walking one level per request. */
async function subtreeSha(ctx: RepoContext, root: string, dir: string): Promise<string | undefined> {
  let current = root;
  if (dir === '') return /^[0-9a-f]{40}$/.test(root) ? root : (await getTree(ctx, current, false))?.sha;
  for (const segment of dir.split('/')) {
    const level = await getTree(ctx, current, false);
    const next = level?.tree.find((e) => e.path === segment && e.type === 'tree');
    if (!next) return undefined;
    current = next.sha;
  }
  return current;
}

/**
 * Lists the files of `ref` (branch or commit) whose repository path starts with
 * `pathPrefix`: one recursive trees request in the common case, a walk when GitHub
 * truncates.
 */
export async function listTree(ctx: RepoContext, ref: string, pathPrefix: string): Promise<ListedFile[]> {
  const first = await getTree(ctx, ref, true);
  if (!first) return [];
  let files: ListedFile[];
  if (!first.truncated) {
    files = first.tree.filter(isFile).map((e) => ({ path: e.path, sha: e.sha, size: e.size ?? 0 }));
  } else {
    const dir = pathPrefix.includes('/') ? pathPrefix.slice(0, pathPrefix.lastIndexOf('/')) : '';
    const sha = await subtreeSha(ctx, first.sha, dir);
    files = [];
    if (sha) await collect(ctx, sha, dir, files, dir === '');
  }
  return files.filter((f) => f.path.startsWith(pathPrefix));
}

/** The complete listing of directory `dir` in tree `rootTree`, through the trees API (for directories over the contents API's 1,000 entries). */
export async function treeDirectory(ctx: RepoContext, rootTree: string, dir: string): Promise<ReadonlyMap<string, KnownEntry>> {
  const out = new Map<string, KnownEntry>();
  const sha = await subtreeSha(ctx, rootTree, dir);
  if (!sha) return out;
  const level = await getTree(ctx, sha, false);
  if (level?.truncated) throw unexpected('git/get-tree', 200, `directory ${dir} has more entries than GitHub lists`);
  for (const e of level?.tree ?? []) {
    out.set(e.path, { sha: e.sha, type: isFile(e) ? 'file' : e.type === 'tree' ? 'dir' : 'other', size: e.size ?? 0 });
  }
  return out;
}
