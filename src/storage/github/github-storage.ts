import type { Clock } from '../../contract/clock.js';
import type { BatchOperation, BatchOptions, RateBudget, StorageAdapter } from '../../contract/storage.js';
import type { BufferedBatchOutcome, BufferedStorage } from '../../contract/buffered-storage.js';
import type { CommitMessageContext, GitHubCommitIdentity } from './context.js';
import type { GitHubStorageEventListener } from './events.js';
import { guardErrors } from './guard-errors.js';
import type { GitHubHttpStats, GitHubTokenSource } from './http.js';
import { closeStore, flushQueue } from './lifecycle.js';
import { listKeys } from './list-keys.js';
import { discardPendingWrite, isPending, pendingWrites } from './pending.js';
import { getKey } from './reads.js';
import { createStoreState } from './store-state.js';
import { batchWrite, deleteKey, putKey } from './write-methods.js';

export { GITHUB_MAX_FILE_BYTES } from './options.js';

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
   * Only `batch()` writes are held; a `put` or `delete` (a lease renewal) or an urgent batch
   * (`{ urgent: true }`: a writer's critical trigger) pushes what is held first, then goes at once.
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
   * long after its own write of a key, a read that finds another blob there asks GitHub's
   * compare API whether the branch contains that commit: if not, the adapter answers from
   * its own commit; if so, another writer's newer file is what it answers. A process always
   * reads what it just wrote, or something newer.
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
  batch(operations: readonly BatchOperation[], options?: BatchOptions): Promise<BufferedBatchOutcome[]>;
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
  const store = createStoreState(options);
  const adapter: GitHubStorage = {
    name: 'github',
    capabilities: store.capabilities,
    get: (key) => getKey(store, key),
    put: (key, bytes, opts) => putKey(store, key, bytes, opts),
    delete: (key, opts) => deleteKey(store, key, opts),
    list: (prefix) => listKeys(store, prefix),
    batch: (operations, options) => batchWrite(store, operations, options),
    rateBudget: () => store.http.budget(),
    flush: () => flushQueue(store),
    stats: () => ({ ...store.http.stats(), queued: store.queue.size, queueDurable: store.queue.durable }),
    pendingWrites: () => pendingWrites(store),
    isPending: (key) => isPending(store, key),
    discardPendingWrite: (seq) => discardPendingWrite(store, seq),
    close: () => closeStore(store),
  };
  return guardErrors(adapter, store.scrubber);
}
