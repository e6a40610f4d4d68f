import { sleep } from '../../contract/clock.js';
import { CheckpointError, conditionFailed, isCheckpointError } from '../../contract/errors.js';
import { encodeRepoPath, type RepoContext } from './context.js';
import { fromBase64 } from '../../codec/base64.js';
import type { KnownEntry } from './head-state.js';
import { isAmbiguous, type GitHubRequest, type GitHubResponse } from './http.js';

/** Attempts of a write whose answer was lost, whose read-back failed, or that lost a race. */
export const MAX_ATTEMPTS = 3;

const OBJECT_MEDIA = 'application/vnd.github.object+json';
const RAW_MEDIA = 'application/vnd.github.raw+json';

interface ContentEntryJson {
  readonly type?: string;
  readonly name?: string;
  readonly sha?: string;
  readonly size?: number;
  readonly content?: string;
  readonly encoding?: string;
  readonly entries?: readonly ContentEntryJson[];
}

export interface FileCommitJson {
  readonly content?: { readonly sha?: string; readonly size?: number } | null;
  readonly commit?: {
    readonly sha?: string;
    readonly tree?: { readonly sha?: string };
    readonly parents?: readonly { readonly sha?: string }[];
  };
}

/**
 * Waits a random while before rebuilding a write that lost a race ("full jitter"
 * exponential back-off), so writers that keep colliding spread out instead of colliding
 * again. The window scales with how long a commit takes (its paced requests) and doubles
 * with each attempt.
 */
export async function raceBackoff(ctx: RepoContext, attempt: number): Promise<void> {
  const span = 2 * ctx.minWriteIntervalMs + 1000;
  await sleep(ctx.clock, Math.round(Math.random() * span * 2 ** attempt));
}

/** A write that lost every race it was allowed (spec: "max 3 attempts, then log error"). */
export function keptChanging(key: string, attempts: number): CheckpointError {
  const base = conditionFailed(key, 'the file kept changing');
  return new CheckpointError('checkpoint_conflict', base.message.replace(/^checkpoint_conflict: /, ''), {
    details: { key, attempts, attemptsExhausted: true },
  });
}

/** `err` with more details (a CheckpointError's details are frozen). */
export function withDetails(err: CheckpointError, extra: Record<string, number | boolean>): CheckpointError {
  const prefix = `${err.reasonCode}: `;
  const message = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
  return new CheckpointError(err.reasonCode, message, {
    details: { ...err.details, ...extra },
    ...(err.cause !== undefined ? { cause: err.cause } : {}),
  });
}

/**
 * Runs a write; when it fails after one of its attempts landed damaged bytes (`damaged()`
 * names those paths), puts them back before the failure is reported, with `details.restored`.
 * A write must not leave what GitHub mangled as the newest file because a later attempt of it
 * lost a race or an answer.
 */
export async function restoringOnFailure<T>(ctx: RepoContext, damaged: () => readonly DamagedPath[], write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const paths = damaged();
    if (paths.length === 0) throw err;
    // Rate-limited: the write is queued and sent again, and repairs its own damage then.
    if (isCheckpointError(err, 'checkpoint_rate_limited')) {
      rememberDamage(ctx, paths);
      throw err;
    }
    const restored = await ctx.restore(paths);
    if (!restored) rememberDamage(ctx, paths);
    throw err instanceof CheckpointError ? withDetails(err, { restored }) : err;
  }
}

/** A path a landed attempt left damaged: what it held before (`sha`) and the blob left there (`left`), when known. */
export interface DamagedPath {
  readonly path: string;
  readonly sha: string | null;
  readonly left?: string | null;
}

/**
 * Blobs this adapter's own writes left damaged at a path and did not put back (a rate limit
 * came first, or restoring failed), by path. A later write of this adapter whose condition
 * finds one of them finds its own damage, not another writer's update, and replaces it — else
 * a queued write that had landed corrupt would conflict with itself on every push.
 */
const ownDamage = new WeakMap<RepoContext, Map<string, string>>();

/** Remembers `paths`' damaged blobs (`left`) as this adapter's own damage. */
export function rememberDamage(ctx: RepoContext, paths: readonly DamagedPath[]): void {
  let known = ownDamage.get(ctx);
  if (!known) ownDamage.set(ctx, (known = new Map()));
  for (const p of paths) if (typeof p.left === 'string') known.set(p.path, p.left);
  while (known.size > 1000) known.delete(known.keys().next().value!); // bounded: the oldest go first
}

/** Whether `sha` at `path` is a blob this adapter's own write left damaged there. */
export function isOwnDamage(ctx: RepoContext, path: string, sha: string | undefined): boolean {
  return sha !== undefined && ownDamage.get(ctx)?.get(path) === sha;
}

/** Forgets the damage at `paths` (a write of them verified). */
export function forgetDamage(ctx: RepoContext, paths: readonly string[]): void {
  const known = ownDamage.get(ctx);
  if (known) for (const p of paths) known.delete(p);
}

/** An answer this adapter cannot interpret: reported, never guessed around. */
export function unexpected(operation: string, status: number, message: string): CheckpointError {
  return new CheckpointError('checkpoint_storage_unavailable', `GitHub ${operation} answered ${status}${message ? `: ${message}` : ''}`, {
    details: { operation, status },
  });
}

/** A blob's bytes by sha (immutable, so never stale), or undefined when there is no such blob. */
export async function readBlob(ctx: RepoContext, sha: string): Promise<Uint8Array | undefined> {
  const res = await ctx.http.request({
    method: 'GET',
    path: `${ctx.repoPath}/git/blobs/${sha}`,
    accept: RAW_MEDIA,
    raw: true,
    operation: 'git/get-blob',
    idempotent: true,
  });
  if (res.status === 200 && res.bytes) return res.bytes;
  if (res.status === 404 || res.status === 422) return undefined;
  throw unexpected('git/get-blob', res.status, res.message);
}

/**
 * The file at `path` on `ref` (a branch name or a commit sha). Files over 1 MB come
 * without content in the contents API; their bytes are read from the blob endpoint
 * by sha, in raw form. Directories, symlinks and submodules are not values: undefined.
 */
export async function readFile(ctx: RepoContext, path: string, ref: string): Promise<{ bytes: Uint8Array; sha: string } | undefined> {
  const res = await ctx.http.request({
    method: 'GET',
    path: `${ctx.repoPath}/contents/${encodeRepoPath(path)}`,
    query: { ref },
    accept: OBJECT_MEDIA,
    operation: 'repos/get-content',
    idempotent: true,
  });
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw unexpected('repos/get-content', res.status, res.message);
  const json = res.json as ContentEntryJson;
  if (json.type !== 'file' || typeof json.sha !== 'string') return undefined;
  if (json.encoding === 'base64' && typeof json.content === 'string') {
    const bytes = fromBase64(json.content);
    if (!bytes) throw unexpected('repos/get-content', 200, 'content is not base64');
    return { bytes, sha: json.sha };
  }
  const bytes = await readBlob(ctx, json.sha);
  return bytes ? { bytes, sha: json.sha } : undefined;
}

/**
 * The complete listing of directory `dir` in commit `commit`: one contents-API request.
 * A missing directory lists as empty. The contents API stops at 1,000 entries; a
 * directory that large is listed through the trees API instead (`walkTree`).
 */
export async function listDirectory(
  ctx: RepoContext,
  dir: string,
  commit: string,
  walkTree: (dir: string) => Promise<ReadonlyMap<string, KnownEntry>>,
): Promise<ReadonlyMap<string, KnownEntry>> {
  const res = await ctx.http.request({
    method: 'GET',
    path: `${ctx.repoPath}/contents${dir === '' ? '' : `/${encodeRepoPath(dir)}`}`,
    query: { ref: commit },
    accept: OBJECT_MEDIA,
    operation: 'repos/get-content',
    idempotent: true,
  });
  if (res.status === 404) return new Map();
  if (res.status !== 200) throw unexpected('repos/get-content', res.status, res.message);
  const json = res.json as ContentEntryJson;
  if (json.type !== 'dir' || !Array.isArray(json.entries)) return new Map();
  if (json.entries.length >= 1000) return walkTree(dir);
  const out = new Map<string, KnownEntry>();
  for (const e of json.entries) {
    if (typeof e.name !== 'string' || typeof e.sha !== 'string') continue;
    out.set(e.name, { sha: e.sha, type: e.type === 'file' ? 'file' : e.type === 'dir' ? 'dir' : 'other', size: e.size ?? 0 });
  }
  return out;
}

/**
 * The current blob sha at `path` on the branch, read until it agrees with what GitHub
 * just told us (`expect`): a 409 means the file exists with another sha, a 422 "sha
 * wasn't supplied" means it exists. A read that contradicts that answer came from a
 * lagging replica and is repeated.
 */
export async function currentSha(
  ctx: RepoContext,
  path: string,
  expect: (sha: string | undefined) => boolean,
): Promise<string | undefined> {
  let sha: string | undefined;
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    sha = (await readFile(ctx, path, ctx.branch))?.sha;
    if (expect(sha)) return sha;
  }
  return sha;
}

export function rememberCommit(ctx: RepoContext, json: FileCommitJson, path: string, sha: string | null, size: number): void {
  const commit = json.commit?.sha;
  const tree = json.commit?.tree?.sha;
  if (!commit || !tree) return;
  const parent = json.commit?.parents?.[0]?.sha;
  const onTop = ctx.state.head !== undefined && parent === ctx.state.head.commit;
  ctx.state.setHead({ commit, tree, atMs: ctx.clock.now() }, onTop);
  if (onTop) ctx.state.applyChanges([{ path, sha, size }]);
  ctx.state.recordOwnWrites(commit, ctx.clock.now(), [{ path, sha, size }]);
}

/**
 * Sends a write GitHub does not make idempotent (a contents PUT or DELETE, a ref update).
 * A lost answer (timeout, network error, 5xx) resolves `undefined`: the write may have
 * landed, and the caller sends it again knowing that. The `MAX_ATTEMPTS`-th lost answer
 * is thrown.
 */
export async function sendWrite(ctx: RepoContext, lost: { count: number }, req: GitHubRequest): Promise<GitHubResponse | undefined> {
  try {
    return await ctx.http.request(req);
  } catch (err) {
    if (isAmbiguous(err) && ++lost.count < MAX_ATTEMPTS) return undefined;
    throw err;
  }
}

export function identity(ctx: RepoContext): Record<string, unknown> {
  return ctx.committer ? { committer: { name: ctx.committer.name, email: ctx.committer.email } } : {};
}

/**
 * Deletes one file through the contents API. The blob sha is the condition (`ifVersion`)
 * or the one the adapter knows or reads. Resolves `true` if the file existed.
 */
export async function deleteFile(ctx: RepoContext, key: string, options: { ifVersion?: string }, maybeLanded = false): Promise<boolean> {
  const path = ctx.toPath(key);
  const known = ctx.state.fileAt(path);
  let sha = options.ifVersion ?? (known === null ? undefined : known?.sha);
  if (sha === undefined) {
    sha = (await readFile(ctx, path, ctx.branch))?.sha;
    if (sha === undefined) return maybeLanded;
  }
  let ambiguous = maybeLanded;
  const lost = { count: 0 };
  let races = 0;
  let sent = 0;
  for (;;) {
    if (sent >= ctx.maxWriteAttempts) {
      throw new CheckpointError('checkpoint_storage_unavailable', `delete of ${key} got no answer in ${sent} attempts`, {
        details: { key, attempts: sent, attemptsExhausted: true, ambiguous: true },
      });
    }
    sent++;
    const res = await sendWrite(ctx, lost, {
      method: 'DELETE',
      path: `${ctx.repoPath}/contents/${encodeRepoPath(path)}`,
      body: { message: ctx.message({ operation: 'delete', keys: [key] }), sha, branch: ctx.branch, ...identity(ctx) },
      operation: 'repos/delete-file',
      idempotent: false,
    });
    if (res === undefined) {
      ambiguous = true;
      ctx.state.forgetOwnWrites([path]); // as in putFile: the lost delete may have landed
      continue;
    }
    if (res.status === 200) {
      const json = res.json as FileCommitJson;
      if (ctx.verify === 'read-back' && json.commit?.sha) {
        const back = await readFile(ctx, path, json.commit.sha);
        if (back !== undefined)
          throw new CheckpointError('checkpoint_atomic_write_failed', `delete of ${key} did not take effect`, { details: { key } });
      }
      rememberCommit(ctx, json, path, null, 0);
      return true;
    }
    if (res.status === 404) {
      if (ambiguous) {
        ctx.emit({ type: 'landed_after_timeout', level: 'info', keys: [key] });
        ctx.state.invalidate();
        return true;
      }
      if (options.ifVersion !== undefined) throw conditionFailed(key, 'key is gone');
      return false;
    }
    if (res.status === 409) {
      if (options.ifVersion !== undefined) throw conditionFailed(key, 'version changed');
      const sentSha = sha;
      const current = await currentSha(ctx, path, (s) => s !== sentSha);
      if (current === undefined) return ambiguous;
      if (++races > ctx.maxConflictRetries || sent >= ctx.maxWriteAttempts) throw keptChanging(key, sent);
      ctx.emit({ type: 'conflict_retry', level: 'info', attempt: races, reason: 'stale_sha', keys: [key] });
      sha = current;
      continue;
    }
    throw unexpected('repos/delete-file', res.status, res.message);
  }
}
