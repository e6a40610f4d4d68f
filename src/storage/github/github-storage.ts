import { sleep, systemClock, type Clock, type TimerHandle } from '../../model/clock.js';
import { CheckpointError, isCheckpointError } from '../../model/errors.js';
import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  PutOptions,
  PutResult,
  RateBudget,
  StorageAdapter,
  StorageCapabilities,
  StorageEntry,
  StoredObject,
} from '../adapter.js';
import type { BufferedBatchOutcome, BufferedStorage } from '../buffered.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey, assertPrefix } from '../keys.js';
import { gitBlobSha } from './git-blob.js';
import { commitOperations, INIT_MARKER_PATH, restore } from './commit-builder.js';
import { deleteFile, isOwnDamage, putFile, readFile, withDetails } from './contents.js';
import type { CommitMessageContext, GitHubCommitIdentity, RepoContext } from './context.js';
import { createEmergencyQueue, mergeQueuedWrites, storageSpill, type QueuedWrite, type QueueSpill } from './emergency-queue.js';
import { defaultSpillRoot, fileSpill, type SpillIdentity } from './file-spill.js';
import type { GitHubStorageEvent, GitHubStorageEventListener } from './events.js';
import { createHeadState } from './head-state.js';
import { createGitHubHttp, retryAtOf, type GitHubHttpStats, type GitHubTokenSource } from './http.js';
import { listTree } from './listing.js';
import { createScrubber, scrubValue, surfaceError, type Scrubber } from './secrets.js';
import { createWriteLock } from './write-lock.js';

/** GitHub refuses files over 100 MB (phased-workflow-github.md "Individual files limited to 100MB"). */
export const GITHUB_MAX_FILE_BYTES = 100 * 1024 * 1024;

/** Options of {@link githubStorage}. */
export interface GitHubStorageOptions {
  /** Repository owner (user or organization). */
  readonly owner: string;
  /** Repository name. */
  readonly repo: string;
  /**
   * Branch that holds the checkpoints. It must exist, unless the repository is empty
   * (then the first write creates it).
   * @default 'main'
   */
  readonly branch?: string;
  /**
   * Folder of the repository that is the adapter's root: key `checkpoints/r1/latest.json`
   * is stored at `<basePath>/checkpoints/r1/latest.json`. Keys cannot escape it.
   * @default '' (the repository root)
   */
  readonly basePath?: string;
  /**
   * A fine-grained token with "Contents: read and write" on this one repository, or a
   * classic token with the `repo` scope (`public_repo` for a public repository); or a
   * function returning the current token (GitHub App installation tokens). It is sent
   * only in the `Authorization` header and never appears in an error, an event or a log.
   */
  readonly token: GitHubTokenSource;
  /** REST API base URL (GitHub Enterprise Server: `https://HOST/api/v3`; the emulator: its `url`). @default 'https://api.github.com' */
  readonly baseUrl?: string;
  /** The `fetch` to use (inject one for proxies, tests, or runtimes without a global). @default globalThis.fetch */
  readonly fetch?: typeof globalThis.fetch;
  /** Clock for every wait (rate limits, pacing, back-off); tests pass a fake one. @default systemClock */
  readonly clock?: Clock;
  /**
   * `rateBudget().low` is true below this many remaining requests (phased-workflow-github.md
   * `before_write.threshold`), so writers switch to batch files.
   * @default 100
   */
  readonly lowRateLimit?: number;
  /**
   * GitHub's secondary limit on content-generating requests (POST, PATCH, PUT, DELETE) per
   * hour. No header reports it, so the adapter counts its own.
   * @default 500
   */
  readonly contentRequestsPerHour?: number;
  /** `rateBudget().low` is also true when fewer content-generating requests than this remain in the hour. @default 50 */
  readonly lowContentRequests?: number;
  /**
   * Longest wait for a rate limit to pass before retrying (spec: "Max 5 min wait"). A
   * limit that lasts longer is not waited for: writes go to the emergency queue, reads
   * fail with `checkpoint_rate_limited`.
   * @default 300000
   */
  readonly maxRateLimitWaitMs?: number;
  /** Least time between two content-generating requests (GitHub: "wait at least one second between each request"). @default 1000 */
  readonly minWriteIntervalMs?: number;
  /** A request without an answer after this long is abandoned (real time: it bounds network I/O, not a schedule). @default 30000 */
  readonly requestTimeoutMs?: number;
  /**
   * Rebuilds of a write that lost a race to another writer (409 stale sha, 422 not a fast
   * forward) before it fails with `checkpoint_conflict` (spec: "Max 3 attempts"). Each
   * waits a random, growing while first.
   * @default 3
   */
  readonly maxConflictRetries?: number;
  /**
   * Write requests (ref updates, contents PUTs/DELETEs) one write may send, whatever made the
   * previous one fail — a lost race, a read-back that did not match, a lost answer (spec:
   * "Retry write (max 3 attempts)", "Max 3 attempts, then log error"). A write that used them
   * all fails with `details.attempts`, `details.requests` and `details.attemptsExhausted`, and
   * the same write sent again within `repeatFailureMs` fails at once, without a request, so a
   * caller's own retries (the writer's `maxAttempts`) cannot multiply the attempts.
   * @default 3 (or `maxConflictRetries + 1` when only that is given)
   */
  readonly maxWriteAttempts?: number;
  /**
   * How long a write that used all its attempts is answered from memory when sent again
   * unchanged (same keys, bytes and conditions). `0` turns it off.
   * @default 60000
   */
  readonly repeatFailureMs?: number;
  /** Retries of a read (or of creating a git object) after a 5xx, a network error or a timeout. @default 3 */
  readonly maxRetries?: number;
  /** Retries after a secondary rate limit, each waiting at least a minute (or `retry-after`), doubling. @default 3 */
  readonly maxSecondaryRetries?: number;
  /**
   * Write-then-verify (spec `atomic_write`): `'read-back'` reads every write back by its
   * commit sha (never the cached `download_url`) and compares git blob shas — one more
   * request per write; `'sha'` trusts the blob shas GitHub returns in the write's own
   * answer, which already are checksums of the stored bytes.
   * @default 'read-back'
   */
  readonly verify?: 'read-back' | 'sha';
  /**
   * When a write to a run's `index.json` loses its condition because another writer
   * changed the index, merge the two (three-way, with `mergeRunIndex`) instead of failing
   * (spec `conflict_handling`: "Merge checkpoint data if possible"). Index documents are
   * recognised by their schema, whatever the profile.
   * @default true
   */
  readonly mergeRunIndexes?: boolean;
  /**
   * The emergency queue (spec `emergency_fallback`): when the rate limit is exhausted, a
   * write is accepted locally (`PutResult.pending`), reads see it, and it is pushed in
   * order when the limit resets, on `flush()` and on `close()`.
   *
   * - `true` (default): durable where the runtime has a file system. In Node, each queued
   *   write is fsync'd to a file under `.savepoint/github-queue/` in the working directory
   *   before it is acknowledged, and the next adapter opened on the same repository and
   *   branch pushes what a crashed process left. Where there is no file system (browsers,
   *   edge runtimes) the queue is in memory: `stats().queueDurable` is false there.
   * - `{ dir }`: the same, in another folder.
   * - `{ storage, prefix }`: in any StorageAdapter (e.g. `fsStorage`), create-only.
   * - `'memory'`: in memory only — a crash loses queued writes (`queueDurable: false`).
   * - `false`: rate-limited writes fail with `checkpoint_rate_limited` instead.
   * @default true
   */
  readonly emergencyQueue?: boolean | 'memory' | { readonly dir: string } | { readonly storage: StorageAdapter; readonly prefix?: string };
  /**
   * Below the rate-limit floor (`rateBudget().low`, spec `before_write`: "consider_batching"),
   * hold writes in the durable emergency queue instead of sending each one, and push the
   * queue as ONE commit (its end state: a file created and replaced within the queue is
   * never written) once `maxWrites` are held, the oldest has waited `maxHoldMs`, or on
   * `flush()` / `close()`. A held write is acknowledged `pending` once it is durable
   * locally — writers answer `outcome: 'queued'` — and a crashed process's held writes are
   * pushed by the next adapter, as for the emergency queue. A writer keeps growing one
   * `batch_{first}_{last}.json` file while its last checkpoint is still held
   * (`isPending`), so awaited checkpoints one at a time still become one batch file.
   * Only `batch()` writes are held; a `put` or `delete` (a lease renewal) pushes what is
   * held first, then goes at once.
   * Only with a durable queue (a memory queue would acknowledge what a crash loses).
   * `false` sends every write at once, whatever the budget.
   * @default { maxWrites: 8, maxHoldMs: 30000 }
   */
  readonly holdBelowFloor?: false | { readonly maxWrites?: number; readonly maxHoldMs?: number };
  /**
   * Writes to one branch are sent one at a time. `'branch'`: across every githubStorage
   * of this JavaScript realm on the same repository and branch; `'adapter'`: within this
   * adapter only.
   * @default 'branch'
   */
  readonly serializeWrites?: 'branch' | 'adapter';
  /**
   * Reads name the branch, and GitHub's replicas may lag behind a fresh commit. For this
   * long after its own write of a key, the adapter answers reads of it from that commit,
   * so a process always reads what it just wrote.
   * @default 60000
   */
  readonly readYourWritesMs?: number;
  /** Commit message of a write. @default `savepoint: <operation> <first key> (+N more)` */
  readonly commitMessage?: (context: CommitMessageContext) => string;
  /** Author and committer of commits. @default the token's user, as GitHub decides */
  readonly committer?: GitHubCommitIdentity;
  /** User-Agent header (GitHub requires one; browsers may ignore it). @default 'savepoint' */
  readonly userAgent?: string;
  /**
   * Largest value accepted (`capabilities.maxValueBytes`); larger puts fail with
   * `checkpoint_too_large`. At most GitHub's own 100 MB limit.
   * @default 104857600 (GitHub's file limit)
   */
  readonly maxValueBytes?: number;
  /** Largest file sent inline (as text in a tree, through the contents API); larger and binary files go as base64 blobs. @default 1048576 */
  readonly inlineMaxBytes?: number;
  /** Receives warnings and progress (rate limit low, waits, conflicts, queued writes). */
  readonly onEvent?: GitHubStorageEventListener;
}

/** Counters of a {@link GitHubStorage}. */
export interface GitHubStorageStats extends GitHubHttpStats {
  /** Writes currently held in the emergency queue. */
  readonly queued: number;
  /** Whether queued writes survive a crash of this process (false for a memory queue: browsers, edge runtimes, `emergencyQueue: 'memory'`). */
  readonly queueDurable: boolean;
}

/** A queued write, as {@link GitHubStorage.pendingWrites} shows it. */
export interface PendingWrite {
  readonly seq: number;
  readonly keys: readonly string[];
  readonly enqueuedAtMs: number;
}

/** The GitHub adapter: a {@link StorageAdapter} with its rate budget, queue and counters. */
export interface GitHubStorage extends BufferedStorage {
  batch(operations: readonly BatchOperation[]): Promise<BufferedBatchOutcome[]>;
  rateBudget(): RateBudget;
  flush(): Promise<void>;
  /** Requests sent so far, by GitHub operation id, and the queue size. */
  stats(): GitHubStorageStats;
  /** Writes held in the emergency queue, oldest first. */
  pendingWrites(): readonly PendingWrite[];
  /** True while a write of `key` is held in the emergency queue (not yet on GitHub). */
  isPending(key: string): boolean;
  /**
   * Gives up a queued write (e.g. one whose condition can no longer hold, which `flush()`
   * keeps reporting as `checkpoint_conflict`). The only way a queued write is ever dropped;
   * resolves false when there is no such write.
   */
  discardPendingWrite(seq: number): Promise<boolean>;
}

const defaultMessage = (c: CommitMessageContext): string =>
  c.operation === 'init' ? 'savepoint: initialise checkpoint storage' : `savepoint: ${c.operation} ${c.keys[0] ?? ''}${c.keys.length > 1 ? ` (+${c.keys.length - 1} more)` : ''}`;

function configError(message: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `githubStorage: ${message}`);
}

/** Numeric options: each must be a finite number at least its minimum (integers where counts). */
const NUMBER_OPTIONS: readonly (readonly [keyof GitHubStorageOptions, number, boolean])[] = [
  ['lowRateLimit', 0, true],
  ['contentRequestsPerHour', 1, true],
  ['lowContentRequests', 0, true],
  ['maxRateLimitWaitMs', 0, false],
  ['minWriteIntervalMs', 0, false],
  ['requestTimeoutMs', 1, false],
  ['maxConflictRetries', 0, true],
  ['maxRetries', 0, true],
  ['maxSecondaryRetries', 0, true],
  ['readYourWritesMs', 0, false],
  ['inlineMaxBytes', 0, true],
  ['maxWriteAttempts', 1, true],
  ['repeatFailureMs', 0, false],
];

/** Checks the options the factory does not check on its way (types, ranges, enums), so a typo fails at once with `checkpoint_config_invalid`. */
function assertOptions(options: GitHubStorageOptions): void {
  for (const [name, min, integer] of NUMBER_OPTIONS) {
    const v = options[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
      throw configError(`${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}`);
    }
  }
  for (const name of ['fetch', 'commitMessage', 'onEvent'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw configError(`${name} must be a function`);
  }
  if (options.baseUrl !== undefined && (typeof options.baseUrl !== 'string' || !/^https?:\/\/[^\s/]+/.test(options.baseUrl))) throw configError('baseUrl must be an http(s) URL');
  if (options.branch !== undefined && typeof options.branch !== 'string') throw configError('branch must be a string');
  if (options.basePath !== undefined && typeof options.basePath !== 'string') throw configError('basePath must be a string');
  if (options.userAgent !== undefined && (typeof options.userAgent !== 'string' || /[\r\n]/.test(options.userAgent))) throw configError('userAgent must be a one-line string');
  if (options.verify !== undefined && options.verify !== 'read-back' && options.verify !== 'sha') throw configError("verify must be 'read-back' or 'sha'");
  if (options.serializeWrites !== undefined && options.serializeWrites !== 'branch' && options.serializeWrites !== 'adapter') throw configError("serializeWrites must be 'branch' or 'adapter'");
  if (options.mergeRunIndexes !== undefined && typeof options.mergeRunIndexes !== 'boolean') throw configError('mergeRunIndexes must be a boolean');
  const clock = options.clock as Partial<Clock> | undefined;
  if (clock !== undefined && (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function')) throw configError('clock must have now, setTimeout and clearTimeout');
  const who = options.committer as Partial<GitHubCommitIdentity> | undefined;
  if (who !== undefined && (typeof who?.name !== 'string' || typeof who.email !== 'string' || who.name === '' || who.email === '')) throw configError('committer must be { name, email } with non-empty strings');
  if (options.maxValueBytes !== undefined && typeof options.maxValueBytes !== 'number') throw configError('maxValueBytes must be a number');
}

/** Where the emergency queue keeps its writes (undefined: memory). */
function spillOf(option: NonNullable<GitHubStorageOptions['emergencyQueue']>, identity: SpillIdentity): QueueSpill | undefined {
  if (option === false || option === 'memory') return undefined;
  if (option === true) {
    const root = defaultSpillRoot();
    return root === undefined ? undefined : fileSpill(root, identity);
  }
  if (typeof option === 'object' && option !== null && 'storage' in option && option.storage !== undefined) {
    const storage = option.storage;
    if (typeof storage.put !== 'function' || typeof storage.get !== 'function' || typeof storage.delete !== 'function' || typeof storage.list !== 'function') {
      throw configError('emergencyQueue.storage must be a StorageAdapter');
    }
    const prefix = option.prefix ?? `savepoint-github-queue/${identity.owner}/${identity.repo}/${encodeURIComponent(identity.branch)}/`;
    if (typeof prefix !== 'string') throw configError('emergencyQueue.prefix must be a string');
    return storageSpill(storage, prefix);
  }
  if (typeof option === 'object' && option !== null && 'dir' in option && typeof option.dir === 'string' && option.dir !== '') {
    const spill = fileSpill(option.dir, identity);
    if (!spill) throw configError('emergencyQueue.dir needs a file system (Node >= 20.16); use emergencyQueue: { storage } or "memory" here');
    return spill;
  }
  throw configError("emergencyQueue must be true, false, 'memory', { dir } or { storage, prefix }");
}

/**
 * Stores checkpoints in a GitHub repository through the REST API (phased-workflow-github.md).
 *
 * - Keys are file paths below `basePath` on `branch`; versions are git blob shas.
 * - `batch()` is one atomic commit through the Git Data API: head → tree with `base_tree`
 *   and inline contents → commit → fast-forward ref update (`force: false`), then one
 *   read-back — 4 requests, 5 when the head is not cached. The first commit of an empty
 *   repository goes through the contents API.
 * - `put`/`delete` of one file use the contents API with the blob sha (1 request + 1
 *   read-back); files over 1 MB are read through the blob endpoint in raw form;
 *   `list` uses the recursive trees API and walks sub-trees when GitHub truncates.
 * - Lost races (409 stale sha, 422 not a fast forward) are retried on the new head up
 *   to 3 times, merging run indexes; a write whose answer was lost is recognised by its
 *   blob sha and never written twice. Writes to a branch are serialized.
 * - Rate limits are tracked from every response; short waits are taken (≤ 5 min, via the
 *   clock), long ones send writes to the emergency queue. `rateBudget().low` tells
 *   writers to batch.
 * - Speaks HTTP only through `fetch`: runs in Node, browsers, Deno, Bun, edge runtimes.
 *
 * @example
 * ```ts
 * import { githubStorage } from 'savepoint/github';
 * const storage = githubStorage({ owner: 'acme', repo: 'agent-checkpoints', token: process.env.GITHUB_TOKEN! });
 * await storage.put('checkpoints/run-1/latest.json', bytes);
 * ```
 */
export function githubStorage(options: GitHubStorageOptions): GitHubStorage {
  if (!options || typeof options !== 'object') throw configError('options are required ({ owner, repo, token })');
  assertOptions(options);
  if (typeof options.owner !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(options.owner)) throw configError('owner must be a GitHub user or organization name');
  if (typeof options.repo !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(options.repo)) throw configError('repo must be a repository name');
  if (typeof options.token !== 'string' && typeof options.token !== 'function') throw configError('token is required (a string or a function returning one)');
  if (typeof options.token === 'string' && options.token.trim() === '') throw configError('token is empty');
  const branch = options.branch ?? 'main';
  if (branch === '' || branch.startsWith('/') || branch.endsWith('/') || /[\s~^:?*[\\]|\.\.|@\{/.test(branch)) throw configError('branch is not a valid branch name');
  const basePath = (options.basePath ?? '').replace(/^\/+|\/+$/g, '');
  if (basePath !== '') {
    try {
      assertKey(basePath);
    } catch {
      throw configError('basePath must be a relative path without "." or ".." segments');
    }
  }
  const fetchImpl = options.fetch ?? (globalThis.fetch as typeof globalThis.fetch | undefined);
  if (typeof fetchImpl !== 'function') throw configError('no fetch in this runtime: pass options.fetch');
  const clock = options.clock ?? systemClock;
  const scrubber = createScrubber(typeof options.token === 'string' ? [options.token] : []);
  const listener = options.onEvent;
  const emit = (event: GitHubStorageEvent): void => {
    try {
      // Events carry GitHub's own words and error messages: scrubbed like errors are.
      listener?.(scrubValue(event, scrubber));
    } catch {
      // A failing listener must not fail a write.
    }
  };
  const baseUrl = (options.baseUrl ?? 'https://api.github.com').replace(/\/+$/, '');
  const http = createGitHubHttp({
    baseUrl,
    token: options.token,
    fetch: (input, init) => fetchImpl(input, init),
    clock,
    scrubber,
    emit,
    userAgent: options.userAgent ?? 'savepoint',
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    minWriteIntervalMs: options.minWriteIntervalMs ?? 1000,
    maxRateLimitWaitMs: options.maxRateLimitWaitMs ?? 300_000,
    maxRetries: options.maxRetries ?? 3,
    maxSecondaryRetries: options.maxSecondaryRetries ?? 3,
    lowWater: options.lowRateLimit ?? 100,
    contentPerHour: options.contentRequestsPerHour ?? 500,
    contentLowWater: options.lowContentRequests ?? 50,
  });
  const state = createHeadState();
  const ctx: RepoContext = {
    http,
    clock,
    emit,
    state,
    branch,
    repoPath: `/repos/${encodeURIComponent(options.owner)}/${encodeURIComponent(options.repo)}`,
    toPath: (key) => (basePath === '' ? key : `${basePath}/${key}`),
    toKey: (path) => (basePath === '' ? path : path.startsWith(`${basePath}/`) ? path.slice(basePath.length + 1) : undefined),
    message: options.commitMessage ?? defaultMessage,
    committer: options.committer,
    verify: options.verify ?? 'read-back',
    mergeRunIndexes: options.mergeRunIndexes ?? true,
    inlineMaxBytes: options.inlineMaxBytes ?? 1024 * 1024,
    minWriteIntervalMs: options.minWriteIntervalMs ?? 1000,
    maxConflictRetries: options.maxConflictRetries ?? 3,
    maxWriteAttempts: options.maxWriteAttempts ?? (options.maxConflictRetries !== undefined ? options.maxConflictRetries + 1 : 3),
    restore: (paths) => restore(ctx, paths),
  };
  const lock = createWriteLock(options.serializeWrites === 'adapter' ? undefined : `${baseUrl}|${options.owner}/${options.repo}|${branch}`);
  const queueOption = options.emergencyQueue ?? true;
  const queueEnabled = queueOption !== false;
  const queue = createEmergencyQueue(spillOf(queueOption, { baseUrl, owner: options.owner, repo: options.repo, branch, basePath }));
  const hold = holdOptionOf(options.holdBelowFloor);
  /** Below the floor with a durable queue: writes are held and pushed together (see holdBelowFloor). */
  const holding = (): boolean => hold !== undefined && queueEnabled && queue.durable && http.budget().low;
  const readYourWritesMs = options.readYourWritesMs ?? 60_000;
  const maxValueBytes = options.maxValueBytes ?? GITHUB_MAX_FILE_BYTES;
  if (!(Number.isInteger(maxValueBytes) && maxValueBytes > 0 && maxValueBytes <= GITHUB_MAX_FILE_BYTES)) throw configError(`maxValueBytes must be a positive integer up to ${GITHUB_MAX_FILE_BYTES}`);
  const capabilities: StorageCapabilities = { atomicBatch: true, crossProcessConditional: true, maxValueBytes };
  let closed = false;
  let flushTimer: TimerHandle | undefined;
  let queueLoaded = false;

  const open = (): void => {
    if (closed) throw new CheckpointError('checkpoint_closed', 'github storage is closed');
  };
  const checkSize = (key: string, bytes: Uint8Array): void => {
    if (!(bytes instanceof Uint8Array)) throw new CheckpointError('checkpoint_schema_invalid', `value of ${key} must be a Uint8Array`, { details: { key } });
    if (bytes.length > maxValueBytes) {
      throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${maxValueBytes}-byte limit`, {
        details: { key, size: bytes.length, limit: maxValueBytes },
      });
    }
  };
  const keysOf = (w: QueuedWrite): string[] => w.operations.map((o) => o.key);

  /**
   * Queue entries this process already tried to push: a failed attempt (a rate limit or a lost
   * answer after the commit was made) may have landed, so the next attempt checks before it
   * writes instead of conflicting with its own write.
   */
  const attempted = new Set<number>();
  /** Pushes one queued write; the same code paths as a direct write, told that an earlier attempt may have landed. */
  const apply = async (queued: QueuedWrite): Promise<void> => {
    const w = attempted.has(queued.seq) ? { ...queued, maybeLanded: true } : queued;
    const [op] = w.operations;
    if (w.kind === 'put' && op?.type === 'put' && op.bytes.length <= ctx.inlineMaxBytes) {
      const { type: _t, key, bytes, ...cond } = op;
      await putFile(ctx, key, bytes, cond, w.maybeLanded);
    } else if (w.kind === 'delete' && op?.type === 'delete') {
      await deleteFile(ctx, op.key, op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {}, w.maybeLanded);
    } else {
      await commitOperations(ctx, w.operations, { operation: w.kind, maybeLanded: w.maybeLanded });
    }
  };

  const scheduleFlush = (atMs: number): void => {
    if (flushTimer !== undefined || closed) return;
    // A background timer: an opportunistic push must not keep a finished program alive.
    // Programs call flush()/close() to wait for the queue (or spill it to durable storage).
    flushTimer = clock.setTimeout(
      () => {
        flushTimer = undefined;
        lock(() => drain(false)).catch(() => undefined); // failures are reported as queue_flush_failed events
      },
      Math.max(1000, atMs - clock.now()),
      { background: true },
    );
  };

  /**
   * Pushes queued writes in order. With `wait`, waits out rate limits however long they
   * last (flush/close); without, stops at the first rate limit and schedules a retry.
   * Resolves true when the queue is empty.
   */
  const drain = async (wait: boolean): Promise<boolean> => {
    await queue.load();
    let merge = true;
    while (queue.peek()) {
      const blocked = http.blockedUntil();
      if (blocked !== undefined && !wait) {
        scheduleFlush(blocked + 5000);
        return false;
      }
      if (merge && queue.size > 1) {
        // The whole queue as one commit; if that fails for any reason but the rate limit
        // (an entry landed on its own before a crash, a condition lost), one at a time.
        const pushed = await pushMerged(wait);
        if (pushed === 'rate-limited') return false;
        if (pushed === 'failed') merge = false;
        continue;
      }
      const w = queue.peek()!;
      try {
        await apply(w);
      } catch (err) {
        attempted.add(w.seq);
        if (isCheckpointError(err, 'checkpoint_rate_limited')) {
          const at = retryAtOf(err) ?? clock.now() + 60_000;
          if (wait) {
            await sleep(clock, Math.max(0, at - clock.now()));
            continue;
          }
          scheduleFlush(at);
          return false;
        }
        const e = isCheckpointError(err) ? err : new CheckpointError('checkpoint_storage_unavailable', 'queued write failed');
        emit({ type: 'queue_flush_failed', level: 'error', seq: w.seq, keys: keysOf(w), reasonCode: e.reasonCode, message: e.message });
        if (!wait) scheduleFlush(clock.now() + 60_000);
        throw err;
      }
      await queue.shift(w.seq);
      attempted.delete(w.seq);
      emit({ type: 'queue_flushed', level: 'info', seq: w.seq, keys: keysOf(w), pending: queue.size });
    }
    return true;
  };

  /** Pushes every queued write in one commit (mergeQueuedWrites). */
  const pushMerged = async (wait: boolean): Promise<'pushed' | 'failed' | 'rate-limited' | 'waited'> => {
    const writes = queue.entries();
    try {
      await commitOperations(ctx, mergeQueuedWrites(writes), { operation: 'batch', maybeLanded: writes.some((w) => w.maybeLanded || attempted.has(w.seq)) });
    } catch (err) {
      for (const w of writes) attempted.add(w.seq);
      if (!isCheckpointError(err, 'checkpoint_rate_limited')) return 'failed';
      const at = retryAtOf(err) ?? clock.now() + 60_000;
      if (!wait) {
        scheduleFlush(at);
        return 'rate-limited';
      }
      await sleep(clock, Math.max(0, at - clock.now()));
      return 'waited';
    }
    for (const w of writes) {
      await queue.shift(w.seq);
      attempted.delete(w.seq);
      emit({ type: 'queue_flushed', level: 'info', seq: w.seq, keys: keysOf(w), pending: queue.size });
    }
    return 'pushed';
  };

  /** Loads writes a previous process spilled, and schedules their push. */
  const loadQueue = async (): Promise<void> => {
    const fresh = !queueLoaded;
    queueLoaded = true;
    await queue.load();
    if (fresh && queue.size > 0) scheduleFlush(clock.now());
  };

  /** Checks a queued write's conditions against what this adapter already knows (the queue, then its cached listings). */
  const checkQueuedConditions = (operations: readonly BatchOperation[]): void => {
    const overlay = queue.overlay();
    for (const op of operations) {
      const queued = overlay.get(op.key);
      const known = queued !== undefined ? (queued === null ? null : { sha: queued.version }) : state.fileAt(ctx.toPath(op.key));
      if (known === undefined) continue; // unknown: checked when the write is pushed
      if (queued === undefined && isOwnDamage(ctx, ctx.toPath(op.key), known?.sha)) continue; // our own damaged write: the push replaces it
      const exists = known !== null;
      if (op.type !== 'delete' && op.ifAbsent && exists) throw new CheckpointError('checkpoint_conflict', `conditional write of ${op.key} failed: key exists`, { details: { key: op.key } });
      if (op.ifVersion !== undefined && known?.sha !== op.ifVersion) {
        throw new CheckpointError('checkpoint_conflict', `conditional write of ${op.key} failed: ${exists ? 'version changed' : 'key is gone'}`, { details: { key: op.key } });
      }
    }
  };

  const enqueue = async (kind: QueuedWrite['kind'], operations: readonly BatchOperation[], maybeLanded: boolean, retryAtMs: number, held = false): Promise<QueuedWrite> => {
    checkQueuedConditions(operations);
    const w = await queue.enqueue(kind, operations, maybeLanded, clock.now());
    const budget = http.budget();
    emit({
      type: 'write_queued',
      level: 'warn',
      seq: w.seq,
      keys: keysOf(w),
      pending: queue.size,
      retryAtMs,
      durable: queue.durable,
      message: held
        ? `Rate limit low: ${budget.remaining} remaining; ${w.operations.length} write(s) held in the durable local queue, to be pushed as one commit with the ones held with them by ${new Date(retryAtMs).toISOString()}`
        : `Rate limit exhausted: ${w.operations.length} write(s) queued for delayed persistence until ${new Date(retryAtMs).toISOString()}${queue.durable ? '' : ' (in memory only: lost if this process dies before flush())'}`,
    });
    scheduleFlush(retryAtMs);
    return w;
  };

  /** What a queued delete reports as `existed`: the queue's view, else the cached listing, else true (GitHub cannot be asked). */
  const existedBefore = (key: string, overlay: ReadonlyMap<string, unknown>): boolean => {
    const queued = overlay.get(key);
    if (queued !== undefined) return queued !== null;
    return state.fileAt(ctx.toPath(key)) !== null;
  };

  /**
   * Runs a write, or queues it when the queue is not empty (order) or the rate limit is
   * exhausted. A queued write that fails for another reason does not fail this one: it is
   * reported (`queue_flush_failed`), retried later, and this write queues behind it.
   */
  const repeatFailureMs = options.repeatFailureMs ?? 60_000;
  /** Writes that used all their attempts, by fingerprint: sent again unchanged, they fail at once. */
  const failedWrites = new Map<string, { error: CheckpointError; atMs: number }>();
  /**
   * What makes two writes "the same write". A create-only put names a checkpoint (a history
   * file is written once): a batch holding one is the same write when it creates the same
   * files with the same bytes, even if its latest/index parts changed (they carry times).
   * Anything else must match exactly: keys, conditions and bytes.
   */
  const fingerprint = async (kind: string, ops: readonly BatchOperation[]): Promise<string> => {
    const creates = ops.filter((op) => op.type === 'put' && op.ifAbsent === true);
    const named = creates.length > 0 ? creates : ops;
    return JSON.stringify([
      kind,
      await Promise.all(named.map(async (op) => [op.type, op.key, op.type !== 'delete' && op.ifAbsent === true, op.ifVersion ?? null, op.type === 'put' ? await gitBlobSha(op.bytes) : null])),
    ]);
  };
  const reportFailure = (operations: readonly BatchOperation[], e: CheckpointError, attempts: number, requests: number, repeated: boolean): void => {
    emit({ type: 'write_failed', level: 'error', keys: operations.map((o) => o.key), reasonCode: e.reasonCode, attempts, requests, repeated, message: e.message });
  };

  /**
   * Runs a direct write under the attempt budget: a failure reports its attempts and requests
   * (error details and a `write_failed` event); one that used every attempt is remembered for
   * `repeatFailureMs`, so sending the very same write again fails without a request — the
   * spec's "max 3 attempts" holds per checkpoint even when the caller retries too.
   */
  const attempt = async <T>(kind: QueuedWrite['kind'], operations: readonly BatchOperation[], direct: () => Promise<T>): Promise<T> => {
    let print: string | undefined;
    if (repeatFailureMs > 0 && failedWrites.size > 0) {
      for (const [k, v] of failedWrites) if (clock.now() - v.atMs >= repeatFailureMs) failedWrites.delete(k);
      print = await fingerprint(kind, operations);
      const known = failedWrites.get(print);
      if (known) {
        const again = withDetails(known.error, { repeated: true });
        reportFailure(operations, again, 0, 0, true);
        throw again;
      }
    }
    const before = http.stats().requests;
    try {
      return await direct();
    } catch (err) {
      if (!isCheckpointError(err) || err.reasonCode === 'checkpoint_rate_limited') throw err;
      const requests = http.stats().requests - before;
      const attempts = typeof err.details.attempts === 'number' ? err.details.attempts : 1;
      const e = withDetails(err, { attempts, requests });
      reportFailure(operations, e, attempts, requests, false);
      if (repeatFailureMs > 0 && err.details.attemptsExhausted === true) {
        failedWrites.set(print ?? (await fingerprint(kind, operations)), { error: e, atMs: clock.now() });
        if (failedWrites.size > 100) failedWrites.delete(failedWrites.keys().next().value!);
      }
      throw e;
    }
  };

  const write = async <T>(
    kind: QueuedWrite['kind'],
    operations: readonly BatchOperation[],
    direct: () => Promise<T>,
    queued: (w: QueuedWrite, existed: (key: string) => boolean, pending: boolean) => T,
  ): Promise<T> =>
    lock(async () => {
      open();
      await loadQueue();
      // Only atomic batches (a writer's checkpoints) are held. A single put or delete — a lease
      // renewal above all — pushes what is held first and goes at once: holding must never let
      // a live writer's lease look stale on GitHub.
      const held = kind === 'batch' && holding();
      if (queue.size > 0 && !held) await drain(false).catch(() => undefined);
      const accept = async (maybeLanded: boolean, retryAtMs: number): Promise<T> => {
        const before = queue.overlay();
        return queued(await enqueue(kind, operations, maybeLanded, retryAtMs), (key) => existedBefore(key, before), true);
      };
      if (held) {
        // Held below the floor: durable locally now, pushed with the writes held with it.
        const oldest = queue.peek()?.enqueuedAtMs ?? clock.now();
        const before = queue.overlay();
        const w = await enqueue(kind, operations, false, Math.max(clock.now(), oldest + hold!.maxHoldMs), true);
        // The size bound: push the queue as one commit now. Still held if that fails (pushed later).
        const pushed = queue.size >= hold!.maxWrites && (await drain(false).catch(() => false));
        return queued(w, (key) => existedBefore(key, before), !pushed);
      }
      if (queueEnabled && queue.size > 0) return accept(false, http.blockedUntil() ?? clock.now() + 60_000);
      try {
        return await attempt(kind, operations, direct);
      } catch (err) {
        if (!queueEnabled || !isCheckpointError(err, 'checkpoint_rate_limited')) throw err;
        // An earlier attempt of this write may have landed before the limit hit: pushing checks first.
        return accept(true, retryAtOf(err) ?? clock.now() + 60_000);
      }
    });

  const adapter: GitHubStorage = {
    name: 'github',
    capabilities,

    async get(key: string): Promise<StoredObject | undefined> {
      open();
      assertKey(key);
      await loadQueue();
      const queued = queue.overlay().get(key);
      if (queued !== undefined) return queued === null ? undefined : { bytes: queued.bytes.slice(), version: queued.version };
      const path = ctx.toPath(key);
      const found = await readFile(ctx, path, branch);
      const own = state.ownWrites(clock.now() - readYourWritesMs).get(path);
      if (own && (found?.sha ?? null) !== own.sha) {
        // The branch answered from a replica that has not seen our commit yet.
        if (own.sha === null) return undefined;
        const mine = await readFile(ctx, path, own.commit);
        if (mine) return { bytes: mine.bytes, version: mine.sha };
      }
      return found ? { bytes: found.bytes, version: found.sha } : undefined;
    },

    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      open();
      assertKey(key);
      assertConditions(key, opts, 'put');
      checkSize(key, bytes);
      const data = bytes.slice();
      const op: BatchOperation = { type: 'put', key, bytes: data, ...(opts.ifAbsent ? { ifAbsent: true } : {}), ...(opts.ifVersion !== undefined ? { ifVersion: opts.ifVersion } : {}) };
      return write(
        'put',
        [op],
        async () => {
          // Over the inline limit: a base64 blob and a commit through the Git Data API.
          if (data.length > ctx.inlineMaxBytes) {
            const [outcome] = await commitOperations(ctx, [op], { operation: 'put' });
            return { version: outcome?.type === 'put' ? outcome.version : '' };
          }
          return { version: await putFile(ctx, key, data, opts) };
        },
        (w, _existed, pending) => ({ version: w.versions[key]!, ...(pending ? { pending: true } : {}) }),
      );
    },

    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      open();
      assertKey(key);
      assertConditions(key, opts, 'delete');
      const op: BatchOperation = { type: 'delete', key, ...(opts.ifVersion !== undefined ? { ifVersion: opts.ifVersion } : {}) };
      return write(
        'delete',
        [op],
        () => deleteFile(ctx, key, opts),
        (_w, existed) => existed(key),
      );
    },

    async *list(prefix: string): AsyncIterable<StorageEntry> {
      open();
      assertPrefix(prefix);
      await loadQueue();
      const scanPrefix = ctx.toPath(prefix);
      const entries = new Map<string, StorageEntry>();
      for (const f of await listTree(ctx, branch, scanPrefix)) {
        if (basePath === '' && f.path === INIT_MARKER_PATH) continue;
        const key = ctx.toKey(f.path);
        if (key === undefined || !key.startsWith(prefix)) continue;
        try {
          assertKey(key);
        } catch {
          continue; // a file savepoint could not have written (not a valid key)
        }
        entries.set(key, { key, version: f.sha, size: f.size });
      }
      for (const [path, w] of state.ownWrites(clock.now() - readYourWritesMs)) {
        const key = ctx.toKey(path);
        if (key === undefined || !key.startsWith(prefix)) continue;
        if (w.sha === null) entries.delete(key);
        else entries.set(key, { key, version: w.sha, size: w.size });
      }
      for (const [key, v] of queue.overlay()) {
        if (!key.startsWith(prefix)) continue;
        if (v === null) entries.delete(key);
        else entries.set(key, { key, version: v.version, size: v.bytes.length });
      }
      const sorted = [...entries.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      for (const e of sorted) yield e;
    },

    async batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
      open();
      assertBatchOperations(operations, (op) => {
        assertConditions(op.key, op, op.type);
        if (op.type === 'put') checkSize(op.key, op.bytes);
      });
      const ops: BatchOperation[] = operations.map((op) => (op.type === 'put' ? { ...op, bytes: op.bytes.slice() } : { ...op }));
      if (ops.length === 0) return [];
      return write(
        'batch',
        ops,
        () => commitOperations(ctx, ops, { operation: 'batch' }),
        (w, existed, pending) =>
          ops.map((op): BatchOutcome =>
            op.type === 'put'
              ? { type: 'put', key: op.key, version: w.versions[op.key]!, ...(pending ? { pending: true } : {}) }
              : op.type === 'delete'
                ? { type: 'delete', key: op.key, existed: existed(op.key) }
                : { type: 'check', key: op.key },
          ),
      );
    },

    rateBudget: () => http.budget(),

    async flush(): Promise<void> {
      open();
      await lock(() => drain(true));
    },

    stats: () => ({ ...http.stats(), queued: queue.size, queueDurable: queue.durable }),

    pendingWrites: () => queue.entries().map((w) => ({ seq: w.seq, keys: keysOf(w), enqueuedAtMs: w.enqueuedAtMs })),

    isPending: (key: string) => queue.overlay().has(key),

    async discardPendingWrite(seq: number): Promise<boolean> {
      open();
      if (!Number.isSafeInteger(seq)) throw new CheckpointError('checkpoint_config_invalid', 'discardPendingWrite() takes the seq of a pending write (an integer)');
      return lock(async () => {
        await loadQueue();
        return queue.discard(seq);
      });
    },

    async close(): Promise<void> {
      if (closed) return;
      await lock(() => drain(true));
      if (flushTimer !== undefined) clock.clearTimeout(flushTimer);
      flushTimer = undefined;
      closed = true;
      await queue.close();
    },
  };
  return guardErrors(adapter, scrubber);
}

/** The `holdBelowFloor` option with its defaults, or undefined when writes are never held. */
function holdOptionOf(option: GitHubStorageOptions['holdBelowFloor']): { maxWrites: number; maxHoldMs: number } | undefined {
  if (option === false) return undefined;
  if (option !== undefined && (option === null || typeof option !== 'object')) throw configError('holdBelowFloor must be false or { maxWrites?, maxHoldMs? }');
  const maxWrites = option?.maxWrites ?? 8;
  const maxHoldMs = option?.maxHoldMs ?? 30_000;
  if (!(Number.isInteger(maxWrites) && maxWrites >= 1)) throw configError('holdBelowFloor.maxWrites must be an integer >= 1');
  if (!(typeof maxHoldMs === 'number' && maxHoldMs >= 0 && Number.isFinite(maxHoldMs))) throw configError('holdBelowFloor.maxHoldMs must be a finite number >= 0');
  return { maxWrites, maxHoldMs };
}

/** Checks a write's conditions: a malformed one is a `checkpoint_config_invalid`, never a TypeError or an unconditional write. */
function assertConditions(key: string, opts: unknown, what: string): void {
  if (opts === null || typeof opts !== 'object') throw new CheckpointError('checkpoint_config_invalid', `${what} options of ${key} must be an object`, { details: { key } });
  const { ifAbsent, ifVersion } = opts as { ifAbsent?: unknown; ifVersion?: unknown };
  if (ifAbsent !== undefined && typeof ifAbsent !== 'boolean') throw new CheckpointError('checkpoint_config_invalid', `${what} of ${key}: ifAbsent must be a boolean`, { details: { key } });
  // An empty or unknown version is a well-formed condition that fails (checkpoint_conflict), as on every adapter.
  if (ifVersion !== undefined && typeof ifVersion !== 'string') {
    throw new CheckpointError('checkpoint_config_invalid', `${what} of ${key}: ifVersion must be a string (a version the adapter returned)`, { details: { key } });
  }
  if (ifAbsent === true && ifVersion !== undefined) throw new CheckpointError('checkpoint_config_invalid', `${what} of ${key}: ifAbsent and ifVersion exclude each other`, { details: { key } });
}

/**
 * Every public call of the adapter, with whatever it throws passed through
 * {@link surfaceError}: one place, so no path (a new code path, a throwing `fetch`, a
 * spill failure) can hand a caller an unscrubbed error or a raw TypeError.
 */
function guardErrors(adapter: GitHubStorage, scrubber: Scrubber): GitHubStorage {
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (err) {
        throw surfaceError(err, scrubber);
      }
    };
  return {
    ...adapter,
    get: guard(adapter.get),
    put: guard(adapter.put),
    delete: guard(adapter.delete),
    batch: guard(adapter.batch),
    flush: guard(adapter.flush),
    discardPendingWrite: guard(adapter.discardPendingWrite),
    close: guard(adapter.close),
    async *list(prefix: string): AsyncIterable<StorageEntry> {
      try {
        yield* adapter.list(prefix);
      } catch (err) {
        throw surfaceError(err, scrubber);
      }
    },
  };
}
