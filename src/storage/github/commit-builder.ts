import { CheckpointError } from '../../model/errors.js';
import type { BatchOperation, BatchOutcome } from '../adapter.js';
import { conditionFailed, mergeRunIndexBytes } from './conflicts.js';
import { forgetDamage, isOwnDamage, listDirectory, MAX_ATTEMPTS, raceBackoff, readBlob, restoringOnFailure, sendWrite, unexpected } from './contents.js';
import { dirOf, encodeRepoPath, type RepoContext } from './context.js';
import { asUtf8Text, toBase64 } from './encoding.js';
import { gitBlobSha } from './git-blob.js';
import type { KnownHead } from './head-state.js';
import { isAmbiguous } from './http.js';
import { treeDirectory } from './listing.js';

/**
 * The file that gives an empty repository its first commit. The Git Data API refuses
 * every call on an empty repository (409 "Git Repository is empty."), so the first
 * commit goes through the contents API; a multi-file batch needs that first commit to
 * exist before it can commit atomically on top of it.
 */
export const INIT_MARKER_PATH = '.savepoint-init';

interface CommitJson {
  readonly sha?: string;
  readonly commit?: { readonly tree?: { readonly sha?: string } };
  readonly files?: readonly { readonly filename?: string; readonly status?: string; readonly sha?: string | null }[];
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
    throw new CheckpointError('checkpoint_storage_unavailable', `branch ${ctx.branch} cannot be read (${res.status}${res.message ? `: ${res.message}` : ''}); create it first`, {
      details: { operation: 'repos/get-commit', status: res.status },
    });
  }
  const json = res.json as CommitJson;
  if (!json.sha || !json.commit?.tree?.sha) throw unexpected('repos/get-commit', res.status, 'no sha in the answer');
  const head: KnownHead = { commit: json.sha, tree: json.commit.tree.sha, atMs: ctx.clock.now() };
  ctx.state.setHead(head, ctx.state.head?.commit === head.commit);
  return head;
}

/** Gives an empty repository its first commit (a marker file) through the contents API. */
async function initEmptyRepository(ctx: RepoContext): Promise<void> {
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
    if (res.status !== 200 && res.status !== 201 && res.status !== 422) throw unexpected('repos/create-or-update-file-contents', res.status, res.message);
  } catch (err) {
    if (!isAmbiguous(err)) throw err;
  }
  ctx.state.invalidate();
}

interface Prepared {
  readonly op: BatchOperation;
  readonly path: string;
  /** What is written this attempt (the caller's bytes, or a merged index). */
  bytes?: Uint8Array;
  expected?: string;
  existed?: boolean;
}

async function ensureListings(ctx: RepoContext, head: KnownHead, paths: readonly string[]): Promise<void> {
  const dirs = [...new Set(paths.map(dirOf))].filter((d) => ctx.state.listing(d) === undefined);
  for (const dir of dirs) {
    ctx.state.setListing(dir, await listDirectory(ctx, dir, head.commit, (d) => treeDirectory(ctx, head.tree, d)));
  }
}

/** A path a landed write left damaged: what it held before (`sha`), and the blob the write left there (`left`), when known. */
export interface RestorePath {
  readonly path: string;
  readonly sha: string | null;
  readonly left?: string | null;
}

/**
 * Points `paths` back at the blobs they held (or removes them), by sha, in one commit on
 * the current head. A path that no longer holds what the damaged write `left` there (another
 * writer replaced it since) is left alone. A head that moves meanwhile is read again, up to
 * `MAX_ATTEMPTS` commits (issue 13: a corrupt write while the head kept moving was left in
 * place as the newest file). Best effort: resolves whether the paths are restored.
 */
export async function restore(ctx: RepoContext, paths: readonly RestorePath[]): Promise<boolean> {
  try {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      if (attempt > 1) ctx.state.invalidate();
      const head = ctx.state.head ?? (await readHead(ctx));
      if (head === 'empty') return false;
      await ensureListings(ctx, head, paths.map((p) => p.path));
      const tree = paths
        .filter((p) => {
          const now = ctx.state.fileAt(p.path)?.sha ?? null;
          return now !== p.sha && (p.left === undefined || now === p.left);
        })
        .map((p) => ({ path: p.path, mode: '100644', type: 'blob', sha: p.sha }));
      if (tree.length === 0) return true;
      const treeRes = await ctx.http.request({ method: 'POST', path: `${ctx.repoPath}/git/trees`, body: { base_tree: head.tree, tree }, operation: 'git/create-tree', idempotent: true });
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
      const ref = await ctx.http.request({
        method: 'PATCH',
        path: `${ctx.repoPath}/git/refs/${encodeRepoPath(`heads/${ctx.branch}`)}`,
        body: { sha: commitSha, force: false },
        operation: 'git/update-ref',
        idempotent: false,
      });
      ctx.state.invalidate();
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

type CommitOptions = { operation: 'batch' | 'put' | 'delete'; maybeLanded?: boolean };

/** A commit of a batch that landed (its ref update answered 200) but whose read-back failed (a rate limit, a lost answer). */
interface UnverifiedCommit {
  readonly commit: string;
  /** What the paths held before it. */
  readonly before: ReadonlyMap<string, string | null>;
  /** The paths it wrote. */
  readonly written: ReadonlySet<string>;
}

/**
 * Such commits, by adapter and by the batch they carried (keys and blob shas of the caller's
 * bytes). The batch sent again (from the emergency queue, "maybe landed") reads that commit
 * back first: its files are its own write, not another writer's, even when GitHub damaged them
 * (issue 13: a create-only checkpoint file that landed corrupt made its queued batch conflict
 * with itself forever). In memory only: a new process sees a plain conflict.
 */
const unverifiedCommits = new WeakMap<RepoContext, Map<string, UnverifiedCommit>>();

const batchPrint = (items: readonly Prepared[]): string => JSON.stringify(items.map((p) => [p.op.type, p.path, p.expected ?? null]));

/** The files a commit changed, by path (read by its sha: never stale). */
async function commitFiles(ctx: RepoContext, commit: string): Promise<Map<string, { status: string; sha: string | null }>> {
  const files = new Map<string, { status: string; sha: string | null }>();
  for (let page = 1; page <= 10; page++) {
    const res = await ctx.http.request({ method: 'GET', path: `${ctx.repoPath}/commits/${commit}`, query: { per_page: '300', page: String(page) }, operation: 'repos/get-commit', idempotent: true });
    if (res.status !== 200) throw unexpected('repos/get-commit', res.status, res.message);
    const list = (res.json as CommitJson).files ?? [];
    for (const f of list) if (f.filename) files.set(f.filename, { status: f.status ?? '', sha: f.sha ?? null });
    if (list.length < 300) break;
  }
  return files;
}

/** Whether the commit's diff shows `p` as it was meant: the expected blob, or the path removed. */
const verified = (p: Prepared, f: { status: string; sha: string | null } | undefined): boolean => (p.op.type === 'put' ? f?.sha === p.expected && f?.status !== 'removed' : f?.status === 'removed');

/** The rewrite of what did not verify: unconditional (its conditions held when it first landed). */
const rewriteOf = (bad: readonly Prepared[]): Prepared[] =>
  bad.map((p) => ({ op: p.op.type === 'put' ? { type: 'put', key: p.op.key, bytes: p.bytes! } : { type: 'delete', key: p.op.key }, path: p.path, ...(p.bytes ? { bytes: p.bytes, expected: p.expected! } : {}), existed: p.existed ?? false }));

/** Applies `ops` in one commit on top of the branch head; the heart of `batch()`. */
export async function commitOperations(ctx: RepoContext, ops: readonly BatchOperation[], options: CommitOptions = { operation: 'batch' }): Promise<BatchOutcome[]> {
  const damage = { paths: [] as RestorePath[] };
  const outcomes = await restoringOnFailure(ctx, () => damage.paths, () => commitAttempts(ctx, ops, options, damage));
  forgetDamage(ctx, ops.map((op) => ctx.toPath(op.key)));
  return outcomes;
}

/** The attempts of {@link commitOperations}; `damage.paths` names what a landed attempt left unverified. */
async function commitAttempts(ctx: RepoContext, ops: readonly BatchOperation[], options: CommitOptions, damage: { paths: RestorePath[] }): Promise<BatchOutcome[]> {
  let items: Prepared[] = await Promise.all(
    ops.map(async (op) => ({ op, path: ctx.toPath(op.key), ...(op.type === 'put' ? { bytes: op.bytes, expected: await gitBlobSha(op.bytes) } : {}) })),
  );
  const all = items;
  const print = batchPrint(items);
  const keys = ops.map((o) => o.key);
  let ambiguous = options.maybeLanded ?? false;
  const lost = { count: 0 };
  let races = 0;
  let verifyFailures = 0;
  /** Ref updates sent: every attempt counts, whatever made the one before fail (spec: "max 3 attempts"). */
  let sent = 0;
  let lastLost: CheckpointError | undefined;
  let conditionsChecked = false;
  /** What each path held before the first landed commit of this batch. */
  const original = new Map<string, string | null>();
  // A merged index is rebuilt from the caller's bytes against each new head.
  const resetMerges = async (): Promise<void> => {
    for (const p of items) {
      if (p.op.type !== 'put' || p.bytes === p.op.bytes) continue;
      p.bytes = p.op.bytes;
      p.expected = await gitBlobSha(p.op.bytes);
    }
  };
  const outcomes = (): BatchOutcome[] =>
    all.map((p): BatchOutcome =>
      p.op.type === 'put' ? { type: 'put', key: p.op.key, version: p.expected! } : p.op.type === 'delete' ? { type: 'delete', key: p.op.key, existed: p.existed ?? false } : { type: 'check', key: p.op.key },
    );

  for (;;) {
    let fresh = false;
    let head = ctx.state.head;
    if (!head) {
      const read = await readHead(ctx);
      if (read === 'empty') {
        await initEmptyRepository(ctx);
        continue;
      }
      head = read;
      fresh = true;
    }
    await ensureListings(
      ctx,
      head,
      items.map((p) => p.path),
    );

    // After a lost answer: did our commit land (perhaps with others on top)?
    const earlier = ambiguous ? unverifiedCommits.get(ctx)?.get(print) : undefined;
    if (earlier) {
      // It did, unverified: read it back now, and rewrite only what it did not store as sent.
      unverifiedCommits.get(ctx)?.delete(print);
      let files: Map<string, { status: string; sha: string | null }>;
      try {
        files = await commitFiles(ctx, earlier.commit);
      } catch (err) {
        rememberUnverified(ctx, print, earlier);
        throw err;
      }
      const bad = items.filter((p) => p.op.type !== 'check' && earlier.written.has(p.path) && !verified(p, files.get(p.path)));
      if (bad.length === 0) {
        ctx.emit({ type: 'landed_after_timeout', level: 'info', keys });
        return outcomes();
      }
      for (const [path, sha] of earlier.before) original.set(path, sha);
      damage.paths = bad.map((p) => ({ path: p.path, sha: original.get(p.path) ?? null, left: files.get(p.path)?.sha ?? null }));
      verifyFailures++;
      ctx.emit({ type: 'verify_retry', level: 'warn', attempt: verifyFailures, keys: bad.map((p) => p.op.key) });
      items = rewriteOf(bad);
      conditionsChecked = true;
      ambiguous = false;
    }
    if (ambiguous) {
      // A check wrote nothing: only the writes tell whether the commit landed.
      const writes = items.filter((p) => p.op.type !== 'check');
      const landed =
        writes.length > 0 &&
        writes.every((p) => {
          const cur = ctx.state.fileAt(p.path);
          return p.op.type === 'put' ? cur?.sha === p.expected : cur === null;
        });
      if (landed) {
        ctx.emit({ type: 'landed_after_timeout', level: 'info', keys });
        return outcomes();
      }
      ambiguous = false;
    }

    // Conditions, against the listings of this head. A run index that lost its
    // condition is merged with the stored one instead.
    let failure: CheckpointError | undefined;
    if (!conditionsChecked) {
      for (const p of items) {
        const found = ctx.state.fileAt(p.path);
        // A directory holds no value: a check sees the key as absent (nothing can be written there anyway).
        const cur = p.op.type === 'check' && found && found.type !== 'file' ? null : found;
        if (cur && cur.type !== 'file') {
          throw new CheckpointError('checkpoint_unsupported', `${p.op.key} is a directory in the repository; git cannot hold a value there`, { details: { key: p.op.key } });
        }
        const { op } = p;
        const createOnly = (op.type === 'put' || op.type === 'check') && op.ifAbsent === true;
        const stale = (createOnly && cur) || (op.ifVersion !== undefined && cur?.sha !== op.ifVersion);
        if (!stale) continue;
        if (cur && isOwnDamage(ctx, p.path, cur.sha)) continue; // our own damaged write, not another writer's: replaced now
        if (op.type === 'put' && cur && ctx.mergeRunIndexes) {
          const theirs = await readBlob(ctx, cur.sha);
          const base = op.ifVersion !== undefined ? await readBlob(ctx, op.ifVersion) : undefined;
          const merged = theirs ? mergeRunIndexBytes(op.bytes, base, theirs) : undefined;
          if (merged) {
            ctx.emit({ type: 'index_merged', level: 'info', key: op.key });
            p.bytes = merged;
            p.expected = await gitBlobSha(merged);
            continue;
          }
        }
        failure = conditionFailed(op.key, cur ? (createOnly ? 'key exists' : 'version changed') : 'key is gone');
        break;
      }
      if (failure) {
        // A cached head may be behind the branch: judge only against a fresh one.
        if (!fresh) {
          ctx.state.invalidate();
          await resetMerges();
          continue;
        }
        throw failure;
      }
    }

    if (sent >= ctx.maxWriteAttempts) {
      // Only lost answers get here (races and failed verifications stop where they happen).
      throw new CheckpointError('checkpoint_storage_unavailable', `commit of ${keys.length} keys got no answer in ${sent} attempts${lastLost ? ` (${lastLost.message})` : ''}`, {
        details: { keys: keys.slice(0, 20), attempts: sent, attemptsExhausted: true, ambiguous: true },
      });
    }

    // Build the tree on top of the head: text inline, binary or large files as blobs.
    const entries: Record<string, unknown>[] = [];
    const changes: { path: string; sha: string | null; size: number }[] = [];
    const before = new Map<string, string | null>();
    for (const p of items) {
      if (p.op.type === 'check') continue; // a fence, held above against this very base tree: nothing to write
      const cur = ctx.state.fileAt(p.path);
      before.set(p.path, cur?.sha ?? null);
      if (p.op.type === 'delete') {
        p.existed = cur !== null && cur !== undefined;
        if (p.existed) {
          entries.push({ path: p.path, mode: '100644', type: 'blob', sha: null });
          changes.push({ path: p.path, sha: null, size: 0 });
        }
        continue;
      }
      const bytes = p.bytes!;
      changes.push({ path: p.path, sha: p.expected!, size: bytes.length });
      if (cur?.sha === p.expected) continue; // already stored: no change to make
      const text = bytes.length <= ctx.inlineMaxBytes ? asUtf8Text(bytes) : undefined;
      if (text !== undefined) {
        entries.push({ path: p.path, mode: '100644', type: 'blob', content: text });
        continue;
      }
      let blob: string | undefined;
      for (let attempt = 1; attempt <= MAX_ATTEMPTS && blob !== p.expected; attempt++) {
        const res = await ctx.http.request({
          method: 'POST',
          path: `${ctx.repoPath}/git/blobs`,
          body: { content: toBase64(bytes), encoding: 'base64' },
          operation: 'git/create-blob',
          idempotent: true,
        });
        if (res.status !== 201) throw unexpected('git/create-blob', res.status, res.message);
        blob = (res.json as { sha?: string }).sha;
        if (blob !== p.expected) ctx.emit({ type: 'verify_retry', level: 'warn', attempt, keys: [p.op.key] });
      }
      if (blob !== p.expected) throw new CheckpointError('checkpoint_atomic_write_failed', `blob of ${p.op.key} did not verify`, { details: { key: p.op.key } });
      entries.push({ path: p.path, mode: '100644', type: 'blob', sha: blob });
    }
    if (entries.length === 0) {
      ctx.state.recordOwnWrites(head.commit, ctx.clock.now(), changes);
      return outcomes();
    }

    const treeRes = await ctx.http.request({ method: 'POST', path: `${ctx.repoPath}/git/trees`, body: { base_tree: head.tree, tree: entries }, operation: 'git/create-tree', idempotent: true });
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

    sent++;
    const refRes = await sendWrite(ctx, lost, {
      method: 'PATCH',
      path: `${ctx.repoPath}/git/refs/${encodeRepoPath(`heads/${ctx.branch}`)}`,
      body: { sha: commit, force: false },
      operation: 'git/update-ref',
      idempotent: false,
    });
    if (refRes === undefined) {
      lastLost = new CheckpointError('checkpoint_storage_unavailable', 'the ref update got no answer');
      ambiguous = true;
      // The commit may have landed: reads must no longer prefer this process's earlier writes of these paths.
      ctx.state.forgetOwnWrites(items.map((p) => p.path));
      conditionsChecked = false;
      ctx.state.invalidate();
      continue;
    }
    if (refRes.status === 422 && /fast.forward/i.test(refRes.message)) {
      if (++races > ctx.maxConflictRetries || sent >= ctx.maxWriteAttempts) {
        throw new CheckpointError('checkpoint_conflict', `the branch kept moving: ${races} commits of ${keys.length} keys lost the race`, {
          details: { keys: keys.slice(0, 20), attempts: sent, attemptsExhausted: true },
        });
      }
      ctx.emit({ type: 'conflict_retry', level: 'info', attempt: races, reason: 'not_fast_forward', keys });
      ctx.state.invalidate();
      await raceBackoff(ctx, races);
      conditionsChecked = false;
      await resetMerges();
      continue;
    }
    if (refRes.status !== 200) throw unexpected('git/update-ref', refRes.status, refRes.message);
    const moved = (refRes.json as { object?: { sha?: string } }).object?.sha;

    // Write-then-verify: read the commit back by its sha and compare every blob sha.
    const bad: Prepared[] = [];
    if (ctx.verify === 'read-back') {
      let files: Map<string, { status: string; sha: string | null }>;
      try {
        files = await commitFiles(ctx, commit);
      } catch (err) {
        // Landed, not verified: the batch sent again reads this commit back first.
        const first = verifyFailures === 0 ? before : original;
        rememberUnverified(ctx, print, { commit, before: first, written: new Set(entries.map((e) => e.path as string)) });
        ctx.state.invalidate();
        throw err;
      }
      for (const p of items) {
        const inCommit = entries.some((e) => e.path === p.path);
        if (inCommit && !verified(p, files.get(p.path))) bad.push(p);
      }
      // The commit landed either way: our listings now describe it, with what GitHub actually
      // stored. A file in the tree but not in the diff did not change: it holds what it held.
      for (const c of changes) {
        const f = files.get(c.path);
        if (f) c.sha = f.status === 'removed' ? null : (f.sha ?? c.sha);
        else if (entries.some((e) => e.path === c.path)) c.sha = before.get(c.path) ?? null;
      }
    } else if (moved !== commit) {
      bad.push(...items.filter((p) => p.op.type === 'put'));
    }
    ctx.state.setHead({ commit, tree, atMs: ctx.clock.now() }, true);
    ctx.state.applyChanges(changes);
    ctx.state.recordOwnWrites(commit, ctx.clock.now(), changes);
    if (verifyFailures === 0) for (const [path, sha] of before) original.set(path, sha);
    if (bad.length === 0) return outcomes();
    // Put back if a later attempt fails otherwise (a lost race, a lost answer): only where the bad blob still is.
    const left = new Map(changes.map((c) => [c.path, c.sha]));
    damage.paths = bad.map((p) => ({ path: p.path, sha: original.get(p.path) ?? null, ...(ctx.verify === 'read-back' ? { left: left.get(p.path) ?? null } : {}) }));
    if (++verifyFailures >= MAX_ATTEMPTS || sent >= ctx.maxWriteAttempts) {
      damage.paths = []; // restored here, and the failure says whether it worked
      // Do not leave what GitHub mangled in place (a damaged latest.json would hide the good
      // one): point the paths back at the blobs they held before this batch, by sha.
      const restored = await restore(ctx, bad.map((p) => ({ path: p.path, sha: original.get(p.path) ?? null })));
      throw new CheckpointError('checkpoint_atomic_write_failed', `commit of ${bad.length} keys did not verify after ${sent} attempts`, {
        details: { keys: bad.map((p) => p.op.key).slice(0, 20), attempts: sent, attemptsExhausted: true, restored },
      });
    }
    ctx.emit({ type: 'verify_retry', level: 'warn', attempt: verifyFailures, keys: bad.map((p) => p.op.key) });
    // Rewrite only what did not verify; its conditions were already met.
    items = rewriteOf(bad);
    conditionsChecked = true;
  }
}

function rememberUnverified(ctx: RepoContext, print: string, commit: UnverifiedCommit): void {
  let known = unverifiedCommits.get(ctx);
  if (!known) unverifiedCommits.set(ctx, (known = new Map()));
  known.set(print, commit);
  if (known.size > 100) known.delete(known.keys().next().value!); // bounded: the oldest go first
}
