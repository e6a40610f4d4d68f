import type { ReasonCode } from '../../contract/reason-codes.js';

/**
 * What githubStorage reports while it works, through the `onEvent` option. Events never
 * carry a token, a header or file contents — only keys, counts, times and GitHub's own
 * (scrubbed) words. `level` says how loud a logger should be: `warn` events are the
 * spec's "log warning" moments (rate limit low, delayed persistence).
 */
export type GitHubStorageEvent =
  /** phased-workflow-github.md `before_write`: fewer than the low-water mark of requests left. Once per window. */
  | {
      readonly type: 'rate_limit_low';
      readonly level: 'warn';
      readonly remaining: number;
      readonly limit: number;
      readonly resetAtMs: number;
      readonly message: string;
    }
  /** A request waits for a rate limit to pass. */
  | {
      readonly type: 'rate_limit_wait';
      readonly level: 'warn';
      readonly kind: 'primary' | 'secondary';
      readonly waitMs: number;
      readonly operation: string;
    }
  /** A request is retried after a server error, a network error or a timeout. */
  | {
      readonly type: 'request_retry';
      readonly level: 'info';
      readonly operation: string;
      readonly attempt: number;
      readonly reason: 'server_error' | 'network' | 'timeout';
      readonly status?: number;
    }
  /** A write lost a race (409 stale sha, 422 not a fast forward) and is rebuilt on the new head. */
  | {
      readonly type: 'conflict_retry';
      readonly level: 'info';
      readonly attempt: number;
      readonly reason: 'not_fast_forward' | 'stale_sha';
      readonly keys: readonly string[];
    }
  /** Two writers changed one run index; their entries were merged instead of failing. */
  | { readonly type: 'index_merged'; readonly level: 'info'; readonly key: string }
  /** Read-back after a write did not match what was sent; the write is repeated. */
  | { readonly type: 'verify_retry'; readonly level: 'warn'; readonly attempt: number; readonly keys: readonly string[] }
  /** A write whose answer was lost (timeout, network, 5xx) turned out to have landed; it was not repeated. */
  | { readonly type: 'landed_after_timeout'; readonly level: 'info'; readonly keys: readonly string[] }
  /** phased-workflow-github.md `emergency_fallback`: rate limit exhausted, the write is queued for delayed persistence. */
  | {
      readonly type: 'write_queued';
      readonly level: 'warn';
      readonly seq: number;
      readonly keys: readonly string[];
      readonly pending: number;
      readonly retryAtMs: number;
      /** Whether the queued write survives a crash of this process (false: a memory queue). */
      readonly durable: boolean;
      readonly message: string;
    }
  /**
   * A write failed (spec: "If all retries fail, log error and continue"): how many write
   * requests it sent (`attempts`, at most `maxWriteAttempts`) and requests in all. `repeated`:
   * the same write had just used all its attempts, so it was refused without a request.
   */
  | {
      readonly type: 'write_failed';
      readonly level: 'error';
      readonly keys: readonly string[];
      readonly reasonCode: ReasonCode;
      readonly attempts: number;
      readonly requests: number;
      readonly repeated: boolean;
      readonly message: string;
    }
  /** A queued write reached GitHub. */
  | {
      readonly type: 'queue_flushed';
      readonly level: 'info';
      readonly seq: number;
      readonly keys: readonly string[];
      readonly pending: number;
    }
  /** A queued write could not be pushed yet; it stays queued. */
  | {
      readonly type: 'queue_flush_failed';
      readonly level: 'error';
      readonly seq: number;
      readonly keys: readonly string[];
      readonly reasonCode: ReasonCode;
      readonly message: string;
    };

/** Receives {@link GitHubStorageEvent}s. Exceptions it throws are ignored. */
export type GitHubStorageEventListener = (event: GitHubStorageEvent) => void;
