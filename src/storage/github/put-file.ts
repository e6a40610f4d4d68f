import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import type { PutOptions } from '../../contract/storage.js';
import { mergeRunIndexBytes } from './conflicts.js';
import {
  currentSha,
  deleteFile,
  forgetDamage,
  identity,
  isOwnDamage,
  keptChanging,
  MAX_ATTEMPTS,
  raceBackoff,
  readBlob,
  readFile,
  rememberCommit,
  rememberDamage,
  restoringOnFailure,
  sendWrite,
  unexpected,
  type DamagedPath,
  type FileCommitJson,
} from './contents.js';
import { encodeRepoPath, type RepoContext } from './context.js';
import { toBase64 } from '../../codec/base64.js';
import { gitBlobSha } from './git-blob.js';
import type { GitHubResponse } from './http.js';

/**
 * Creates or replaces one file through the contents API (one request, plus one
 * read-back by commit sha when verifying by read-back).
 *
 * - `ifAbsent` sends no sha: GitHub's 422 "sha wasn't supplied" means the key exists.
 * - `ifVersion` sends it as the blob sha: a 409 "does not match" means it changed. GitHub
 *   *creates* a missing path even when a sha is given (201); the adapter then removes
 *   the file it just created and reports the conflict ("key is gone").
 * - Unconditional puts use the sha the adapter knows, re-reading it on 409/422.
 * - A lost answer (timeout, network error, 5xx) is resolved by comparing the stored blob
 *   sha with the locally computed one, so a write that landed is never repeated.
 * - A run `index.json` whose condition fails is merged with the stored one instead.
 */
export async function putFile(ctx: RepoContext, key: string, bytes: Uint8Array, options: PutOptions, maybeLanded = false): Promise<string> {
  const damage = { paths: [] as DamagedPath[] };
  const version = await restoringOnFailure(
    ctx,
    () => damage.paths,
    () => putFileAttempts(ctx, key, bytes, options, maybeLanded, damage),
  );
  forgetDamage(ctx, [ctx.toPath(key)]);
  return version;
}

/** The state of one {@link putFile}'s attempts. */
interface PutRun {
  readonly key: string;
  readonly path: string;
  readonly options: PutOptions;
  /** What is written (the caller's bytes, or a merged index). */
  content: Uint8Array;
  /** The git blob sha of `content`. */
  expected: string;
  /** The blob sha sent as the condition (none: create). */
  sha: string | undefined;
  /** An earlier attempt may have landed (its answer was lost). */
  ambiguous: boolean;
  readonly lost: { count: number };
  races: number;
  verifyFailures: number;
  /** Contents PUTs sent: every attempt counts, whatever made the one before fail (spec: "max 3 attempts"). */
  sent: number;
  /** The caller's condition still applies (not after a merge or a rewrite of our own damage). */
  conditional: boolean;
  /**
   * What the path held before this put (the sha of the first accepted PUT, or none when it
   * created the file): restored if GitHub keeps storing something else.
   */
  previous: string | null | undefined;
}

/** The attempts of {@link putFile}; `damage.paths` names what a landed attempt left unverified. */
async function putFileAttempts(
  ctx: RepoContext,
  key: string,
  bytes: Uint8Array,
  options: PutOptions,
  maybeLanded: boolean,
  damage: { paths: DamagedPath[] },
): Promise<string> {
  const path = ctx.toPath(key);
  const own = ctx.state.ownWrites(0).get(path);
  const knownSha = own ? (own.sha ?? undefined) : (ctx.state.fileAt(path)?.sha ?? undefined);
  const run: PutRun = {
    key,
    path,
    options,
    content: bytes,
    expected: await gitBlobSha(bytes),
    sha: options.ifAbsent ? undefined : (options.ifVersion ?? knownSha),
    ambiguous: maybeLanded,
    lost: { count: 0 },
    races: 0,
    verifyFailures: 0,
    sent: 0,
    conditional: options.ifAbsent === true || options.ifVersion !== undefined,
    previous: undefined,
  };
  for (;;) {
    if (run.sent >= ctx.maxWriteAttempts) {
      throw new CheckpointError('checkpoint_storage_unavailable', `write of ${key} got no answer in ${run.sent} attempts`, {
        details: { key, attempts: run.sent, attemptsExhausted: true, ambiguous: true },
      });
    }
    run.sent++;
    const res = await sendWrite(ctx, run.lost, {
      method: 'PUT',
      path: `${ctx.repoPath}/contents/${encodeRepoPath(path)}`,
      body: {
        message: ctx.message({ operation: 'put', keys: [key] }),
        content: toBase64(run.content),
        branch: ctx.branch,
        ...(run.sha !== undefined ? { sha: run.sha } : {}),
        ...identity(ctx),
      },
      operation: 'repos/create-or-update-file-contents',
      idempotent: false,
    });
    if (res === undefined) {
      run.ambiguous = true;
      // It may have landed: what this process last wrote there is no longer the newest truth,
      // so reads must not prefer it to what the branch shows (see forgetOwnWrites).
      ctx.state.forgetOwnWrites([path]);
      continue;
    }
    let version: string | undefined;
    if (res.status === 200 || res.status === 201) version = await onStored(ctx, run, res, damage);
    else if (res.status === 422 && /sha/i.test(res.message) && /supplied/i.test(res.message)) version = await onExists(ctx, run, res);
    else if (res.status === 409) version = await onStale(ctx, run);
    else throw unexpected('repos/create-or-update-file-contents', res.status, res.message);
    if (version !== undefined) return version;
  }
}

/** The put landed after a lost answer: reported, and the head state dropped. */
function landed(ctx: RepoContext, run: PutRun): string {
  ctx.emit({ type: 'landed_after_timeout', level: 'info', keys: [run.key] });
  ctx.state.invalidate();
  return run.expected;
}

/** Merges a run index with the stored one (`current`), instead of failing its condition; false when it is not one. */
async function tryMerge(ctx: RepoContext, run: PutRun, current: string): Promise<boolean> {
  if (!ctx.mergeRunIndexes) return false;
  const theirs = await readBlob(ctx, current);
  const base = run.options.ifVersion !== undefined ? await readBlob(ctx, run.options.ifVersion) : undefined;
  const merged = theirs ? mergeRunIndexBytes(run.content, base, theirs) : undefined;
  if (!merged) return false;
  ctx.emit({ type: 'index_merged', level: 'info', key: run.key });
  run.content = merged;
  run.expected = await gitBlobSha(run.content);
  run.sha = current;
  run.conditional = false; // the merge already accounts for the other writer
  return true;
}

/** 200/201: stored; verified, the version; else undefined to send it again (or a failure once out of attempts). */
async function onStored(ctx: RepoContext, run: PutRun, res: GitHubResponse, damage: { paths: DamagedPath[] }): Promise<string | undefined> {
  const { key, path } = run;
  if (run.previous === undefined) run.previous = res.status === 201 ? null : (run.sha ?? null);
  const json = res.json as FileCommitJson;
  const stored = json.content?.sha;
  const commit = json.commit?.sha;
  if (res.status === 201 && run.options.ifVersion !== undefined && run.conditional) {
    // GitHub ignored the sha because the path was gone: undo, then report the conflict.
    if (stored) await deleteFile(ctx, key, { ifVersion: stored }).catch(() => undefined);
    throw conditionFailed(key, 'key is gone');
  }
  let ok = stored === run.expected;
  if (ok && ctx.verify === 'read-back' && commit) {
    const back = await readFile(ctx, path, commit);
    ok = back !== undefined && back.sha === run.expected && (await gitBlobSha(back.bytes)) === run.expected;
  }
  rememberCommit(ctx, json, path, stored ?? null, json.content?.size ?? run.content.length);
  if (ok) return run.expected;
  // Put back if a later attempt fails otherwise (a lost race, a lost answer), where the bad blob still is.
  damage.paths = [{ path, sha: run.previous ?? null, ...(stored ? { left: stored } : {}) }];
  if (++run.verifyFailures >= MAX_ATTEMPTS || run.sent >= ctx.maxWriteAttempts) {
    const damaged = damage.paths;
    damage.paths = []; // restored here, and the failure says whether it worked
    const restored = await ctx.restore([{ path, sha: run.previous ?? null }]);
    if (!restored) rememberDamage(ctx, damaged); // left in place: the next write of this key replaces it
    throw new CheckpointError('checkpoint_atomic_write_failed', `write of ${key} did not verify after ${run.sent} attempts`, {
      details: { key, attempts: run.sent, attemptsExhausted: true, restored },
    });
  }
  ctx.emit({ type: 'verify_retry', level: 'warn', attempt: run.verifyFailures, keys: [key] });
  run.sha = stored;
  run.conditional = false;
  return undefined;
}

/** 422 "sha wasn't supplied": the key exists and no sha was sent. */
async function onExists(ctx: RepoContext, run: PutRun, res: GitHubResponse): Promise<string | undefined> {
  const current = await currentSha(ctx, run.path, (s) => s !== undefined);
  if (run.ambiguous && current === run.expected) return landed(ctx, run);
  if (run.conditional && isOwnDamage(ctx, run.path, current)) {
    run.sha = current; // our own damaged write, not another writer's: replace it
    run.conditional = false;
    return undefined;
  }
  if (current === undefined) throw unexpected('repos/create-or-update-file-contents', 422, res.message);
  if (run.conditional) {
    if (await tryMerge(ctx, run, current)) return undefined;
    ctx.state.forgetOwnWrites([run.path]); // another writer's file: reads must show it, not ours
    throw conditionFailed(run.key, 'key exists');
  }
  if (++run.races > ctx.maxConflictRetries || run.sent >= ctx.maxWriteAttempts) throw keptChanging(run.key, run.sent);
  ctx.emit({ type: 'conflict_retry', level: 'info', attempt: run.races, reason: 'stale_sha', keys: [run.key] });
  await raceBackoff(ctx, run.races);
  run.sha = current;
  return undefined;
}

/** 409: stale sha, the file changed since that version. */
async function onStale(ctx: RepoContext, run: PutRun): Promise<string | undefined> {
  const sentSha = run.sha;
  const current = await currentSha(ctx, run.path, (s) => s !== sentSha);
  if (run.ambiguous && current === run.expected) return landed(ctx, run);
  if (run.conditional && isOwnDamage(ctx, run.path, current)) {
    run.sha = current; // our own damaged write, not another writer's: replace it
    run.conditional = false;
    return undefined;
  }
  if (run.conditional) {
    if (current !== undefined && (await tryMerge(ctx, run, current))) return undefined;
    ctx.state.forgetOwnWrites([run.path]); // another writer's change: reads must show it, not ours
    throw conditionFailed(run.key, current === undefined ? 'key is gone' : 'version changed');
  }
  if (++run.races > ctx.maxConflictRetries || run.sent >= ctx.maxWriteAttempts) throw keptChanging(run.key, run.sent);
  ctx.emit({ type: 'conflict_retry', level: 'info', attempt: run.races, reason: 'stale_sha', keys: [run.key] });
  run.sha = current;
  return undefined;
}
