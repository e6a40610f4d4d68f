import {
  GitTreeError,
  type GitCommitData,
  type GitMode,
  type GitObjectType,
  type GitPathEntry,
  type GitSignature,
  type GitTreeChange,
} from './git-store.js';
import { compareAncestry } from './commit-ancestry.js';
import type { RepoState } from './repo-state.js';
import type { GitHubOperationId } from './schemas.js';

/** What a handler answers. */
export interface Reply {
  readonly status: number;
  readonly json?: unknown;
  readonly raw?: Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  /** The media type whose published schema the JSON body must match. */
  readonly mediaType: string;
}

/** Everything a handler needs about the request and the emulator. */
export interface HandlerContext {
  readonly state: RepoState;
  readonly owner: string;
  readonly repo: string;
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  readonly accept: string;
  readonly query: URLSearchParams;
  readonly body: unknown;
  /** Branch-named reads answer this many first-parent commits behind the head (stale-read fault). */
  readonly staleBack: number | undefined;
  /** Stored blobs get one byte flipped (corrupt-write fault). */
  readonly corrupt: boolean;
  readonly contentsDirectoryLimit: number;
  readonly treeEntryLimit: number;
  readonly commitFilesPerPage: number;
}

/** A route: the operation and its handler. */
export interface Route {
  readonly operation: GitHubOperationId;
  readonly contentCreating: boolean;
  /** The branch a `move-head` fault should move for this request. */
  branch(ctx: HandlerContext): string;
  handle(ctx: HandlerContext): Reply;
}

const ONE_MB = 1024 * 1024;
const DOCS = 'https://docs.github.com/rest';
const JSON_TYPE = 'application/json';

/** A GitHub-style error body. */
export function errorReply(status: number, message: string, docs = DOCS, extra: Record<string, unknown> = {}): Reply {
  return { status, json: { message, documentation_url: docs, status: String(status), ...extra }, mediaType: JSON_TYPE };
}

const emptyRepo = (docs: string): Reply => errorReply(409, 'Git Repository is empty.', docs);
const fromPathSegments = (encoded: string): string => encoded.split('/').map(decodeURIComponent).join('/');

function base64Wrapped(bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes).toString('base64');
  return b64 === '' ? '' : `${b64.match(/.{1,60}/g)!.join('\n')}\n`;
}

function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) return undefined;
  return Buffer.from(compact, 'base64');
}

function flip(bytes: Uint8Array): Uint8Array {
  const out = bytes.length === 0 ? new Uint8Array(1) : Uint8Array.from(bytes);
  out[0] = (out[0] ?? 0) ^ 0x20;
  return out;
}

const nodeId = (kind: string, sha: string): string =>
  `${kind}_kwDO${Buffer.from(sha.slice(0, 24), 'hex').toString('base64').replace(/[+/=]/g, '')}`;

function urls(ctx: HandlerContext) {
  const api = `${ctx.base}/repos/${ctx.owner}/${ctx.repo}`;
  const html = `${ctx.base}/${ctx.owner}/${ctx.repo}`;
  return { api, html };
}

const encodePath = (path: string): string => path.split('/').map(encodeURIComponent).join('/');

interface Resolved {
  readonly commit: string;
  readonly tree: string;
}

/** Resolves a ref the way GitHub's read endpoints do: full sha, `heads/x`, or a branch name. Branch-named reads honour the stale-read fault. */
function resolveRef(ctx: HandlerContext, ref: string | null | undefined): Resolved | undefined {
  const { store } = ctx.state;
  const r = ref === null || ref === undefined || ref === '' ? ctx.state.defaultBranch : ref;
  let commit: string | undefined;
  if (/^[0-9a-f]{40}$/.test(r) && store.get(r)?.type === 'commit') commit = r;
  else {
    const branch = r.replace(/^(refs\/)?heads\//, '');
    commit = ctx.staleBack !== undefined ? ctx.state.staleHead(branch, ctx.staleBack) : store.refs.get(branch);
  }
  if (!commit) return undefined;
  const obj = store.get(commit);
  return obj?.type === 'commit' ? { commit, tree: obj.commit.tree } : undefined;
}

function commitTreeSha(ctx: HandlerContext, commit: string): string {
  const obj = ctx.state.store.get(commit);
  if (obj?.type !== 'commit') throw new Error('not a commit');
  return obj.commit.tree;
}

function contentType(entry: GitPathEntry): 'file' | 'dir' | 'symlink' | 'submodule' {
  if (entry.type === 'tree') return 'dir';
  if (entry.type === 'commit') return 'submodule';
  return entry.mode === '120000' ? 'symlink' : 'file';
}

function contentItem(ctx: HandlerContext, entry: GitPathEntry, ref: string): Record<string, unknown> {
  const { api, html } = urls(ctx);
  const type = contentType(entry);
  const self = `${api}/contents/${encodePath(entry.path)}?ref=${encodeURIComponent(ref)}`;
  const git = `${api}/git/${type === 'dir' ? 'trees' : 'blobs'}/${entry.sha}`;
  const htmlUrl = `${html}/${type === 'dir' ? 'tree' : 'blob'}/${ref}/${encodePath(entry.path)}`;
  return {
    type,
    size: entry.size ?? 0,
    name: entry.path.split('/').pop() ?? '',
    path: entry.path,
    sha: entry.sha,
    url: self,
    git_url: git,
    html_url: htmlUrl,
    download_url: type === 'file' ? `${ctx.base}/raw/${ctx.owner}/${ctx.repo}/${ref}/${encodePath(entry.path)}` : null,
    _links: { self, git, html: htmlUrl },
  };
}

function dirEntries(ctx: HandlerContext, tree: string, path: string, ref: string): Record<string, unknown>[] {
  const { store } = ctx.state;
  const dirTree = path === '' ? tree : store.entryAt(tree, path)?.sha;
  if (!dirTree) return [];
  const obj = store.get(dirTree);
  if (obj?.type !== 'tree') return [];
  // GitHub lists at most 1,000 files of a directory through the contents API.
  return obj.entries.slice(0, ctx.contentsDirectoryLimit).map((e) => {
    const child = store.get(e.sha);
    return contentItem(
      ctx,
      {
        path: path === '' ? e.name : `${path}/${e.name}`,
        mode: e.mode,
        type: e.type,
        sha: e.sha,
        ...(child?.type === 'blob' ? { size: child.data.length } : {}),
      },
      ref,
    );
  });
}

function getContent(ctx: HandlerContext, rawPath: string): Reply {
  const docs = `${DOCS}/repos/contents#get-repository-content`;
  if (ctx.state.empty) return errorReply(404, 'This repository is empty.', docs);
  const refParam = ctx.query.get('ref');
  const resolved = resolveRef(ctx, refParam);
  if (!resolved) return errorReply(404, `No commit found for the ref ${refParam ?? ''}`, docs);
  const ref = refParam ?? ctx.state.defaultBranch;
  const path = fromPathSegments(rawPath);
  const entry: GitPathEntry | undefined =
    path === '' ? { path: '', mode: '040000', type: 'tree', sha: resolved.tree } : ctx.state.store.entryAt(resolved.tree, path);
  if (!entry) return errorReply(404, 'Not Found', docs);
  const objectMedia = ctx.accept.includes('application/vnd.github.object');
  const rawMedia = ctx.accept.includes('application/vnd.github.raw');
  if (entry.type === 'tree') {
    const entries = dirEntries(ctx, resolved.tree, path, ref);
    if (objectMedia) return { status: 200, json: { ...contentItem(ctx, entry, ref), entries }, mediaType: 'application/vnd.github.object' };
    return { status: 200, json: entries, mediaType: JSON_TYPE };
  }
  const obj = ctx.state.store.get(entry.sha);
  if (obj?.type !== 'blob') return { status: 200, json: contentItem(ctx, entry, ref), mediaType: JSON_TYPE };
  if (rawMedia) return { status: 200, raw: new Uint8Array(obj.data), mediaType: 'application/vnd.github.raw' };
  const large = obj.data.length > ONE_MB;
  if (objectMedia) {
    return {
      status: 200,
      json: { ...contentItem(ctx, entry, ref), content: large ? '' : base64Wrapped(obj.data), encoding: large ? 'none' : 'base64' },
      mediaType: 'application/vnd.github.object',
    };
  }
  if (large) {
    return errorReply(
      403,
      'This API returns blobs up to 1 MB in size. The requested blob is too large to fetch via the API, but you can use the Git Data API to request blobs up to 100 MB in size.',
      docs,
      { errors: [{ resource: 'Blob', field: 'data', code: 'too_large' }] },
    );
  }
  return {
    status: 200,
    json: { ...contentItem(ctx, entry, ref), content: base64Wrapped(obj.data), encoding: 'base64' },
    mediaType: JSON_TYPE,
  };
}

interface Signed {
  readonly name?: string;
  readonly email?: string;
  readonly date?: string;
}
const signatureOf = (ctx: HandlerContext, given: Signed | undefined, fallback?: GitSignature): GitSignature => {
  const base = fallback ?? ctx.state.signature();
  return given?.name && given.email ? { name: given.name, email: given.email, date: given.date ?? base.date } : base;
};

function fileCommitJson(ctx: HandlerContext, commit: string, file: GitPathEntry | null, branch: string): Record<string, unknown> {
  const { api, html } = urls(ctx);
  const obj = ctx.state.store.get(commit);
  if (obj?.type !== 'commit') throw new Error('not a commit');
  const c = obj.commit;
  return {
    content: file ? { ...contentItem(ctx, file, branch) } : null,
    commit: {
      sha: commit,
      node_id: nodeId('C', commit),
      url: `${api}/git/commits/${commit}`,
      html_url: `${html}/commit/${commit}`,
      author: { ...c.author },
      committer: { ...c.committer },
      message: c.message,
      tree: { url: `${api}/git/trees/${c.tree}`, sha: c.tree },
      parents: c.parents.map((p) => ({ url: `${api}/git/commits/${p}`, html_url: `${html}/commit/${p}`, sha: p })),
      verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
    },
  };
}

interface PutBody {
  readonly message: string;
  readonly content: string;
  readonly sha?: string;
  readonly branch?: string;
  readonly committer?: Signed;
  readonly author?: Signed;
}

function putContent(ctx: HandlerContext, rawPath: string): Reply {
  const docs = `${DOCS}/repos/contents#create-or-update-file-contents`;
  const body = ctx.body as PutBody;
  const path = fromPathSegments(rawPath);
  const bytes = decodeBase64(body.content);
  if (!bytes) return errorReply(422, 'Invalid request.\n\ncontent is not valid Base64', docs);
  const branch = body.branch ?? ctx.state.defaultBranch;
  const head = ctx.state.store.refs.get(branch);
  if (!head && !ctx.state.empty) return errorReply(404, `Branch ${branch} not found`, docs);
  const existing = head ? ctx.state.store.entryAt(commitTreeSha(ctx, head), path) : undefined;
  if (existing?.type === 'tree') return errorReply(422, `Invalid request.\n\n${path} is a directory`, docs);
  if (existing) {
    if (body.sha === undefined) return errorReply(422, 'Invalid request.\n\n"sha" wasn\'t supplied.', docs);
    if (body.sha !== existing.sha) return errorReply(409, `${path} does not match ${body.sha}`, docs);
  }
  const blob = ctx.state.store.putBlob(ctx.corrupt ? flip(bytes) : bytes);
  let tree: string;
  try {
    tree = ctx.state.store.applyChanges(head ? commitTreeSha(ctx, head) : undefined, [
      { path, entry: { mode: '100644', type: 'blob', sha: blob } },
    ]);
  } catch (err) {
    if (err instanceof GitTreeError) return errorReply(422, `Invalid request.\n\n${err.message}`, docs);
    throw err;
  }
  const author = signatureOf(ctx, body.author ?? body.committer);
  const commit = ctx.state.commitTree(branch, tree, body.message, author, signatureOf(ctx, body.committer, author));
  const entry = ctx.state.store.entryAt(tree, path)!;
  return { status: existing ? 200 : 201, json: fileCommitJson(ctx, commit, entry, branch), mediaType: JSON_TYPE };
}

interface DeleteBody {
  readonly message: string;
  readonly sha: string;
  readonly branch?: string;
  readonly committer?: Signed;
  readonly author?: Signed;
}

function deleteContent(ctx: HandlerContext, rawPath: string): Reply {
  const docs = `${DOCS}/repos/contents#delete-a-file`;
  const body = ctx.body as DeleteBody;
  const path = fromPathSegments(rawPath);
  const branch = body.branch ?? ctx.state.defaultBranch;
  const head = ctx.state.store.refs.get(branch);
  if (!head) return errorReply(404, ctx.state.empty ? 'Not Found' : `Branch ${branch} not found`, docs);
  const existing = ctx.state.store.entryAt(commitTreeSha(ctx, head), path);
  if (!existing || existing.type === 'tree') return errorReply(404, 'Not Found', docs);
  if (body.sha !== existing.sha) return errorReply(409, `${path} does not match ${body.sha}`, docs);
  const tree = ctx.state.store.applyChanges(commitTreeSha(ctx, head), [{ path, entry: null }]);
  const author = signatureOf(ctx, body.author ?? body.committer);
  const commit = ctx.state.commitTree(branch, tree, body.message, author, signatureOf(ctx, body.committer, author));
  return { status: 200, json: fileCommitJson(ctx, commit, null, branch), mediaType: JSON_TYPE };
}

function gitCommitJson(ctx: HandlerContext, sha: string): Record<string, unknown> {
  const { api, html } = urls(ctx);
  const obj = ctx.state.store.get(sha);
  if (obj?.type !== 'commit') throw new Error('not a commit');
  const c = obj.commit;
  return {
    sha,
    node_id: nodeId('C', sha),
    url: `${api}/git/commits/${sha}`,
    html_url: `${html}/commit/${sha}`,
    author: { ...c.author },
    committer: { ...c.committer },
    tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
    message: c.message,
    parents: c.parents.map((p) => ({ sha: p, url: `${api}/git/commits/${p}`, html_url: `${html}/commit/${p}` })),
    verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
  };
}

const lineCount = (data: Buffer | undefined): number => {
  if (!data || data.length === 0 || data.includes(0)) return 0;
  const text = data.toString('utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
};

/** The files commit `commit` changed against its first parent, as GitHub lists them, with the line counts. */
/** The files that differ between two trees (GitHub's diff entries; links name `commit`). */
function treeDiff(
  ctx: HandlerContext,
  commit: string,
  beforeTree: string | undefined,
  afterTree: string,
): { files: Record<string, unknown>[]; additions: number; deletions: number } {
  const { store } = ctx.state;
  const { api, html } = urls(ctx);
  const blobs = (tree: string | undefined): Map<string, string> =>
    new Map(
      tree
        ? store
            .walk(tree)
            .filter((e) => e.type === 'blob')
            .map((e) => [e.path, e.sha] as const)
        : [],
    );
  const before = blobs(beforeTree);
  const after = blobs(afterTree);
  const data = (sha: string | undefined): Buffer | undefined => {
    const o = sha ? store.get(sha) : undefined;
    return o?.type === 'blob' ? o.data : undefined;
  };
  const files: Record<string, unknown>[] = [];
  let additions = 0;
  let deletions = 0;
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort();
  for (const path of paths) {
    const a = before.get(path);
    const b = after.get(path);
    if (a === b) continue;
    const status = a === undefined ? 'added' : b === undefined ? 'removed' : 'modified';
    const add = b === undefined ? 0 : lineCount(data(b));
    const del = a === undefined ? 0 : lineCount(data(a));
    additions += add;
    deletions += del;
    const sha = b ?? a!;
    files.push({
      sha,
      filename: path,
      status,
      additions: add,
      deletions: del,
      changes: add + del,
      blob_url: `${html}/blob/${commit}/${encodePath(path)}`,
      raw_url: `${html}/raw/${commit}/${encodePath(path)}`,
      contents_url: `${api}/contents/${encodePath(path)}?ref=${commit}`,
    });
  }
  return { files, additions, deletions };
}

function getCommit(ctx: HandlerContext, rawRef: string): Reply {
  const docs = `${DOCS}/commits/commits#get-a-commit`;
  if (ctx.state.empty) return emptyRepo(docs);
  const ref = fromPathSegments(rawRef);
  const resolved = resolveRef(ctx, ref);
  if (!resolved) return errorReply(422, `No commit found for SHA: ${ref}`, docs);
  const { store } = ctx.state;
  const obj = store.get(resolved.commit);
  if (obj?.type !== 'commit') return errorReply(422, `No commit found for SHA: ${ref}`, docs);
  const c = obj.commit;
  const { api } = urls(ctx);
  const parentTree = c.parents[0] ? commitTreeSha(ctx, c.parents[0]) : undefined;
  const { files, additions, deletions } = treeDiff(ctx, resolved.commit, parentTree, c.tree);
  const perPage = Math.min(
    Math.max(Number(ctx.query.get('per_page') ?? ctx.commitFilesPerPage) || ctx.commitFilesPerPage, 1),
    ctx.commitFilesPerPage,
  );
  const page = Math.max(Number(ctx.query.get('page') ?? 1) || 1, 1);
  const pageFiles = files.slice((page - 1) * perPage, page * perPage);
  const headers: Record<string, string> = {};
  if (page * perPage < files.length) {
    headers.link = `<${api}/commits/${resolved.commit}?per_page=${perPage}&page=${page + 1}>; rel="next"`;
  }
  return {
    status: 200,
    headers,
    mediaType: JSON_TYPE,
    json: { ...commitJson(ctx, resolved.commit, c), stats: { additions, deletions, total: additions + deletions }, files: pageFiles },
  };
}

/** A commit as GitHub's `commit` schema describes it (without stats and files). */
function commitJson(ctx: HandlerContext, sha: string, c: GitCommitData): Record<string, unknown> {
  const { api, html } = urls(ctx);
  return {
    url: `${api}/commits/${sha}`,
    sha,
    node_id: nodeId('C', sha),
    html_url: `${html}/commit/${sha}`,
    comments_url: `${api}/commits/${sha}/comments`,
    commit: {
      url: `${api}/git/commits/${sha}`,
      author: { ...c.author },
      committer: { ...c.committer },
      message: c.message,
      comment_count: 0,
      tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
      verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
    },
    author: null,
    committer: null,
    parents: c.parents.map((p) => ({ sha: p, url: `${api}/commits/${p}`, html_url: `${html}/commit/${p}` })),
  };
}

/**
 * `GET /compare/{base}...{head}`: how head relates to base (`status`, `ahead_by`, `behind_by`),
 * the commits head adds, and the files that differ between the merge base and head. Branch
 * names honour the stale-read fault, shas never do.
 */
function compareCommits(ctx: HandlerContext, rawBasehead: string): Reply {
  const docs = `${DOCS}/commits/commits#compare-two-commits`;
  if (ctx.state.empty) return emptyRepo(docs);
  const basehead = fromPathSegments(rawBasehead);
  const [baseRef, headRef, extra] = basehead.split('...');
  if (baseRef === undefined || headRef === undefined || extra !== undefined) return errorReply(404, 'Not Found', docs);
  const base = resolveRef(ctx, baseRef);
  const head = resolveRef(ctx, headRef);
  if (!base || !head) return errorReply(404, 'Not Found', docs);
  const { store } = ctx.state;
  const found = compareAncestry(store, base.commit, head.commit);
  if (!found) return errorReply(404, `No common ancestor between ${baseRef} and ${headRef}.`, docs);
  const data = (sha: string): GitCommitData => {
    const obj = store.get(sha);
    if (obj?.type !== 'commit') throw new Error('not a commit');
    return obj.commit;
  };
  const perPage = Math.min(Math.max(Number(ctx.query.get('per_page') ?? 250) || 250, 1), 250);
  const page = Math.max(Number(ctx.query.get('page') ?? 1) || 1, 1);
  // Without paging parameters GitHub lists the 250 most recent commits; with them, pages from the oldest.
  const paged = ctx.query.has('per_page') || ctx.query.has('page');
  const pageCommits = paged ? found.commits.slice((page - 1) * perPage, page * perPage) : found.commits.slice(-250);
  // GitHub lists the changed files on the first page only, at most 300 of them.
  const files = page === 1 ? treeDiff(ctx, head.commit, commitTreeSha(ctx, found.mergeBase), head.tree).files.slice(0, 300) : [];
  const { api, html } = urls(ctx);
  return {
    status: 200,
    mediaType: JSON_TYPE,
    json: {
      url: `${api}/compare/${basehead}`,
      html_url: `${html}/compare/${basehead}`,
      permalink_url: `${html}/compare/${ctx.owner}:${base.commit}...${ctx.owner}:${head.commit}`,
      diff_url: `${html}/compare/${basehead}.diff`,
      patch_url: `${html}/compare/${basehead}.patch`,
      base_commit: commitJson(ctx, base.commit, data(base.commit)),
      merge_base_commit: commitJson(ctx, found.mergeBase, data(found.mergeBase)),
      status: found.status,
      ahead_by: found.aheadBy,
      behind_by: found.behindBy,
      total_commits: found.aheadBy,
      commits: pageCommits.map((sha) => commitJson(ctx, sha, data(sha))),
      files,
    },
  };
}

function createBlob(ctx: HandlerContext): Reply {
  const docs = `${DOCS}/git/blobs#create-a-blob`;
  if (ctx.state.empty) return emptyRepo(docs);
  const body = ctx.body as { content: string; encoding?: string };
  const encoding = body.encoding ?? 'utf-8';
  let bytes: Uint8Array;
  if (encoding === 'base64') {
    const decoded = decodeBase64(body.content);
    if (!decoded) return errorReply(422, 'Invalid request.\n\ncontent is not valid Base64', docs);
    bytes = decoded;
  } else if (encoding === 'utf-8' || encoding === 'utf8') {
    bytes = Buffer.from(body.content, 'utf8');
  } else {
    return errorReply(422, `Invalid request.\n\nencoding ${encoding} is not supported`, docs);
  }
  const sha = ctx.state.store.putBlob(ctx.corrupt ? flip(bytes) : bytes);
  return { status: 201, json: { url: `${urls(ctx).api}/git/blobs/${sha}`, sha }, mediaType: JSON_TYPE };
}

function getBlob(ctx: HandlerContext, sha: string): Reply {
  const docs = `${DOCS}/git/blobs#get-a-blob`;
  if (ctx.state.empty) return emptyRepo(docs);
  const obj = ctx.state.store.get(sha);
  if (obj?.type !== 'blob') return errorReply(404, 'Not Found', docs);
  if (ctx.accept.includes('application/vnd.github.raw'))
    return { status: 200, raw: new Uint8Array(obj.data), mediaType: 'application/vnd.github.raw' };
  return {
    status: 200,
    mediaType: JSON_TYPE,
    json: {
      sha,
      node_id: nodeId('B', sha),
      size: obj.data.length,
      url: `${urls(ctx).api}/git/blobs/${sha}`,
      content: base64Wrapped(obj.data),
      encoding: 'base64',
    },
  };
}

function treeJson(ctx: HandlerContext, sha: string, entries: readonly GitPathEntry[], truncated: boolean): Record<string, unknown> {
  const { api } = urls(ctx);
  return {
    sha,
    url: `${api}/git/trees/${sha}`,
    tree: entries.map((e) => ({
      path: e.path,
      mode: e.mode,
      type: e.type,
      sha: e.sha,
      ...(e.size !== undefined ? { size: e.size } : {}),
      url: `${api}/git/${e.type === 'tree' ? 'trees' : e.type === 'blob' ? 'blobs' : 'commits'}/${e.sha}`,
    })),
    truncated,
  };
}

interface TreeInput {
  readonly path?: string;
  readonly mode?: GitMode;
  readonly type?: GitObjectType;
  readonly sha?: string | null;
  readonly content?: string;
}

function createTree(ctx: HandlerContext): Reply {
  const docs = `${DOCS}/git/trees#create-a-tree`;
  if (ctx.state.empty) return emptyRepo(docs);
  const body = ctx.body as { tree: readonly TreeInput[]; base_tree?: string };
  const { store } = ctx.state;
  if (body.base_tree !== undefined && store.get(body.base_tree)?.type !== 'tree')
    return errorReply(422, 'Invalid request.\n\nbase_tree is not a valid tree oid', docs);
  const changes: GitTreeChange[] = [];
  for (const item of body.tree) {
    if (!item.path || !item.mode || !item.type)
      return errorReply(422, 'Invalid request.\n\nEach tree entry needs path, mode and type', docs);
    const hasContent = item.content !== undefined;
    const hasSha = item.sha !== undefined;
    if (hasContent && hasSha) return errorReply(422, 'Invalid request.\n\nUse either tree.sha or content, not both', docs);
    if (hasContent) {
      const sha = store.putBlob(
        Buffer.from(ctx.corrupt ? String.fromCharCode(item.content!.charCodeAt(0) ^ 0x20) + item.content!.slice(1) : item.content!, 'utf8'),
      );
      changes.push({ path: item.path, entry: { mode: item.mode, type: 'blob', sha } });
    } else if (item.sha === null) {
      changes.push({ path: item.path, entry: null });
    } else if (typeof item.sha === 'string') {
      const obj = store.get(item.sha);
      if (!obj || (item.type !== 'commit' && obj.type !== item.type))
        return errorReply(422, `Invalid request.\n\ntree.sha ${item.sha} is not a valid ${item.type}`, docs);
      changes.push({ path: item.path, entry: { mode: item.mode, type: item.type, sha: item.sha } });
    } else {
      return errorReply(422, 'Invalid request.\n\nEach tree entry needs sha or content', docs);
    }
  }
  let sha: string;
  try {
    sha = store.applyChanges(body.base_tree, changes);
  } catch (err) {
    if (err instanceof GitTreeError) return errorReply(422, `GitRPC::BadObjectState: ${err.message}`, docs);
    throw err;
  }
  const obj = store.get(sha);
  const root = obj?.type === 'tree' ? obj.entries : [];
  const entries = root.map((e) => {
    const child = store.get(e.sha);
    return { path: e.name, mode: e.mode, type: e.type, sha: e.sha, ...(child?.type === 'blob' ? { size: child.data.length } : {}) };
  });
  return { status: 201, json: treeJson(ctx, sha, entries, false), mediaType: JSON_TYPE };
}

function getTree(ctx: HandlerContext, rawSha: string): Reply {
  const docs = `${DOCS}/git/trees#get-a-tree`;
  if (ctx.state.empty) return emptyRepo(docs);
  const { store } = ctx.state;
  const ref = fromPathSegments(rawSha);
  let tree: string | undefined;
  const direct = /^[0-9a-f]{40}$/.test(ref) ? store.get(ref) : undefined;
  if (direct?.type === 'tree') tree = ref;
  else tree = resolveRef(ctx, ref)?.tree;
  if (!tree) return errorReply(404, 'Not Found', docs);
  const recursive = ctx.query.has('recursive');
  const all = recursive
    ? store.walk(tree)
    : (() => {
        const obj = store.get(tree);
        return obj?.type === 'tree'
          ? obj.entries.map((e) => {
              const child = store.get(e.sha);
              return {
                path: e.name,
                mode: e.mode,
                type: e.type,
                sha: e.sha,
                ...(child?.type === 'blob' ? { size: child.data.length } : {}),
              };
            })
          : [];
      })();
  const truncated = all.length > ctx.treeEntryLimit;
  return { status: 200, json: treeJson(ctx, tree, truncated ? all.slice(0, ctx.treeEntryLimit) : all, truncated), mediaType: JSON_TYPE };
}

function createCommit(ctx: HandlerContext): Reply {
  const docs = `${DOCS}/git/commits#create-a-commit`;
  if (ctx.state.empty) return emptyRepo(docs);
  const body = ctx.body as { message: string; tree: string; parents?: string[]; author?: Signed; committer?: Signed };
  const { store } = ctx.state;
  if (store.get(body.tree)?.type !== 'tree') return errorReply(422, 'Tree SHA does not exist', docs);
  for (const p of body.parents ?? [])
    if (store.get(p)?.type !== 'commit') return errorReply(422, 'Parent SHA does not exist or is not a commit object', docs);
  const author = signatureOf(ctx, body.author);
  const sha = store.putCommit({
    tree: body.tree,
    parents: body.parents ?? [],
    author,
    committer: signatureOf(ctx, body.committer, author),
    message: body.message,
  });
  return { status: 201, json: gitCommitJson(ctx, sha), mediaType: JSON_TYPE };
}

function refJson(ctx: HandlerContext, branch: string, sha: string): Record<string, unknown> {
  const { api } = urls(ctx);
  return {
    ref: `refs/heads/${branch}`,
    node_id: nodeId('REF', sha),
    url: `${api}/git/refs/heads/${encodePath(branch)}`,
    object: { type: 'commit', sha, url: `${api}/git/commits/${sha}` },
  };
}

function getRef(ctx: HandlerContext, rawRef: string): Reply {
  const docs = `${DOCS}/git/refs#get-a-reference`;
  if (ctx.state.empty) return emptyRepo(docs);
  const ref = fromPathSegments(rawRef);
  if (!ref.startsWith('heads/')) return errorReply(404, 'Not Found', docs);
  const branch = ref.slice('heads/'.length);
  const sha = ctx.staleBack !== undefined ? ctx.state.staleHead(branch, ctx.staleBack) : ctx.state.store.refs.get(branch);
  if (!sha) return errorReply(404, 'Not Found', docs);
  return { status: 200, json: refJson(ctx, branch, sha), mediaType: JSON_TYPE };
}

function updateRef(ctx: HandlerContext, rawRef: string): Reply {
  const docs = `${DOCS}/git/refs#update-a-reference`;
  const ref = fromPathSegments(rawRef);
  const branch = ref.replace(/^(refs\/)?heads\//, '');
  const body = ctx.body as { sha: string; force?: boolean };
  const { store } = ctx.state;
  const current = ref.startsWith('heads/') || ref.startsWith('refs/heads/') ? store.refs.get(branch) : undefined;
  if (!current) return errorReply(422, 'Reference does not exist', docs);
  if (store.get(body.sha)?.type !== 'commit') return errorReply(422, 'Object does not exist', docs);
  if (!body.force && !store.isAncestor(current, body.sha)) return errorReply(422, 'Update is not a fast forward', docs);
  store.refs.set(branch, body.sha);
  return { status: 200, json: refJson(ctx, branch, body.sha), mediaType: JSON_TYPE };
}

const bodyBranch = (ctx: HandlerContext): string => {
  const b = ctx.body as { branch?: unknown } | undefined;
  return typeof b?.branch === 'string' ? b.branch : ctx.state.defaultBranch;
};

/** Matches a request to a route; `undefined` for endpoints the emulator does not implement. */
export function route(method: string, repoPath: string): { route: Route; param: string } | undefined {
  const m = (re: RegExp): string | undefined => {
    const found = re.exec(repoPath);
    return found ? (found[1] ?? '') : undefined;
  };
  const def = (ctx: HandlerContext): string => ctx.state.defaultBranch;
  const read = (p: string, operation: GitHubOperationId, handle: (c: HandlerContext, p: string) => Reply) => ({
    param: p,
    route: { operation, contentCreating: false, branch: def, handle: (c: HandlerContext) => handle(c, p) },
  });
  let param: string | undefined;
  switch (method) {
    case 'GET':
      if ((param = m(/^\/contents(?:\/(.*))?$/)) !== undefined) return read(param, 'repos/get-content', getContent);
      if ((param = m(/^\/commits\/(.+)$/)) !== undefined) return read(param, 'repos/get-commit', getCommit);
      if ((param = m(/^\/compare\/(.+)$/)) !== undefined) return read(param, 'repos/compare-commits-with-basehead', compareCommits);
      if ((param = m(/^\/git\/blobs\/([^/]+)$/)) !== undefined) return read(param, 'git/get-blob', getBlob);
      if ((param = m(/^\/git\/trees\/(.+)$/)) !== undefined) return read(param, 'git/get-tree', getTree);
      if ((param = m(/^\/git\/ref\/(.+)$/)) !== undefined) return read(param, 'git/get-ref', getRef);
      return undefined;
    case 'PUT':
      if ((param = m(/^\/contents\/(.+)$/)) !== undefined)
        return {
          param,
          route: {
            operation: 'repos/create-or-update-file-contents',
            contentCreating: true,
            branch: bodyBranch,
            handle: (c) => putContent(c, param!),
          },
        };
      return undefined;
    case 'DELETE':
      if ((param = m(/^\/contents\/(.+)$/)) !== undefined)
        return {
          param,
          route: { operation: 'repos/delete-file', contentCreating: true, branch: bodyBranch, handle: (c) => deleteContent(c, param!) },
        };
      return undefined;
    case 'POST':
      if (repoPath === '/git/blobs')
        return { param: '', route: { operation: 'git/create-blob', contentCreating: true, branch: def, handle: createBlob } };
      if (repoPath === '/git/trees')
        return { param: '', route: { operation: 'git/create-tree', contentCreating: true, branch: def, handle: createTree } };
      if (repoPath === '/git/commits')
        return { param: '', route: { operation: 'git/create-commit', contentCreating: true, branch: def, handle: createCommit } };
      return undefined;
    case 'PATCH':
      if ((param = m(/^\/git\/refs\/(.+)$/)) !== undefined) {
        const p = param;
        return {
          param,
          route: {
            operation: 'git/update-ref',
            contentCreating: true,
            branch: () => fromPathSegments(p).replace(/^(refs\/)?heads\//, ''),
            handle: (c) => updateRef(c, p),
          },
        };
      }
      return undefined;
    default:
      return undefined;
  }
}
