import { systemClock, type Clock, type TimerHandle } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import type { StorageCapabilities } from '../../contract/storage.js';
import { restore } from './restore.js';
import type { RepoContext } from './context.js';
import { createEmergencyQueue, type EmergencyQueue } from './emergency-queue.js';
import type { GitHubStorageEvent, GitHubStorageEventListener } from './events.js';
import type { GitHubStorageOptions } from './github-storage.js';
import { createHeadState } from './head-state.js';
import { holdOptionOf, type HoldOption } from './hold.js';
import { createGitHubHttp, type GitHubHttp } from './http.js';
import { assertOptions, configError, defaultMessage, maxValueBytesOf, repositoryOf, spillOf } from './options.js';
import { createScrubber, scrubValue, type Scrubber } from './secrets.js';
import { createWriteLock, type WriteLock } from './write-lock.js';

/**
 * Everything one githubStorage keeps between calls: its settings, the parts it works
 * through, and the few values that change (closed, the flush timer, queue bookkeeping).
 * The adapter's methods are plain functions over it.
 */
export interface GitHubStoreState {
  /** What the request-level modules share: HTTP, the head cache, key ↔ path, write settings. */
  readonly ctx: RepoContext;
  readonly http: GitHubHttp;
  readonly clock: Clock;
  /** Sends an event to `onEvent`, scrubbed; a throwing listener never fails a write. */
  readonly emit: GitHubStorageEventListener;
  /** Removes tokens from errors and events. */
  readonly scrubber: Scrubber;
  readonly branch: string;
  /** `basePath` without leading or trailing slashes (`''`: the repository root). */
  readonly basePath: string;
  /** Serializes writes to the branch (`serializeWrites`). */
  readonly lock: WriteLock;
  /** The emergency queue: rate-limited writes, and writes held below the floor, wait here. */
  readonly queue: EmergencyQueue;
  /** False with `emergencyQueue: false`: a rate-limited write fails instead of queueing. */
  readonly queueEnabled: boolean;
  /** `holdBelowFloor` with its defaults; undefined when writes are never held. */
  readonly hold: HoldOption | undefined;
  /** How long reads of a key this adapter wrote are answered from its own commit. */
  readonly readYourWritesMs: number;
  /** Largest value accepted. */
  readonly maxValueBytes: number;
  /** How long a write that used all its attempts is answered from memory when sent again (0: never). */
  readonly repeatFailureMs: number;
  readonly capabilities: StorageCapabilities;
  /** Set by close(); every later call fails with `checkpoint_closed`. */
  closed: boolean;
  /** The scheduled background push of the queue, if any. */
  flushTimer: TimerHandle | undefined;
  /** Whether the queue's spill was read (the first read schedules the push of what a crashed process left). */
  queueLoaded: boolean;
  /**
   * Queue entries this process already tried to push: a failed attempt (a rate limit or a lost
   * answer after the commit was made) may have landed, so the next attempt checks before it
   * writes instead of conflicting with its own write.
   */
  readonly attempted: Set<number>;
  /** Writes that used all their attempts, by fingerprint: sent again unchanged, they fail at once. */
  readonly failedWrites: Map<string, { error: CheckpointError; atMs: number }>;
}

/** Checks the options and builds the state of a new adapter (nothing is sent yet). */
export function createStoreState(options: GitHubStorageOptions): GitHubStoreState {
  if (!options || typeof options !== 'object') throw configError('options are required ({ owner, repo, token })');
  assertOptions(options);
  const { branch, basePath } = repositoryOf(options);
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
  const ctx = repoContextOf(options, { http, clock, emit, branch, basePath });
  const lock = createWriteLock(options.serializeWrites === 'adapter' ? undefined : `${baseUrl}|${options.owner}/${options.repo}|${branch}`);
  const queueOption = options.emergencyQueue ?? true;
  const queue = createEmergencyQueue(spillOf(queueOption, { baseUrl, owner: options.owner, repo: options.repo, branch, basePath }));
  const hold = holdOptionOf(options.holdBelowFloor);
  const readYourWritesMs = options.readYourWritesMs ?? 60_000;
  const maxValueBytes = maxValueBytesOf(options);
  return {
    ctx,
    http,
    clock,
    emit,
    scrubber,
    branch,
    basePath,
    lock,
    queue,
    queueEnabled: queueOption !== false,
    hold,
    readYourWritesMs,
    maxValueBytes,
    repeatFailureMs: options.repeatFailureMs ?? 60_000,
    capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes },
    closed: false,
    flushTimer: undefined,
    queueLoaded: false,
    attempted: new Set(),
    failedWrites: new Map(),
  };
}

/** The context the request-level modules (contents, commits, listings) work in. */
function repoContextOf(
  options: GitHubStorageOptions,
  parts: Pick<RepoContext, 'http' | 'clock' | 'emit' | 'branch'> & { readonly basePath: string },
): RepoContext {
  const { basePath } = parts;
  const ctx: RepoContext = {
    http: parts.http,
    clock: parts.clock,
    emit: parts.emit,
    state: createHeadState(),
    branch: parts.branch,
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
  return ctx;
}

/** Fails once the adapter is closed. */
export function assertOpen(store: GitHubStoreState): void {
  if (store.closed) throw new CheckpointError('checkpoint_closed', 'github storage is closed');
}
