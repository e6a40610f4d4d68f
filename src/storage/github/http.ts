import type { Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import type { RateBudget } from '../../contract/storage.js';
import type { GitHubStorageEventListener } from './events.js';
import { request } from './http-request.js';
import { createHttpState } from './http-state.js';
import type { Scrubber } from './secrets.js';

/** A token, or a function returning the current one (GitHub App installation tokens rotate). */
export type GitHubTokenSource = string | (() => string | Promise<string>);

/** One REST call. */
export interface GitHubRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path below the API URL, starting with `/`, already percent-encoded. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  /** Accept header. @default 'application/vnd.github+json' */
  readonly accept?: string;
  /** The response is raw bytes (media type `vnd.github.raw`) when the status is 200. */
  readonly raw?: boolean;
  /** GitHub's operation id, for events and stats. */
  readonly operation: string;
  /**
   * Whether repeating the request after a lost answer is harmless. GETs and the creation
   * of git objects (content-addressed, invisible until a ref points at them) are; a
   * contents PUT/DELETE or a ref update is not, and its failures are reported as
   * ambiguous for the caller to resolve.
   */
  readonly idempotent: boolean;
}

/** A response the caller must interpret (everything except rate limits, auth failures, 5xx and network errors). */
export interface GitHubResponse {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON body, or undefined. */
  readonly json: unknown;
  /** Raw body for `raw` requests answered with 200. */
  readonly bytes?: Uint8Array;
  /** GitHub's `message`, scrubbed of secrets ('' when none). */
  readonly message: string;
}

/** Options of {@link createGitHubHttp}. */
export interface GitHubHttpOptions {
  readonly baseUrl: string;
  readonly token: GitHubTokenSource;
  readonly fetch: typeof globalThis.fetch;
  readonly clock: Clock;
  readonly scrubber: Scrubber;
  readonly emit: GitHubStorageEventListener;
  readonly userAgent: string;
  readonly requestTimeoutMs: number;
  readonly minWriteIntervalMs: number;
  readonly maxRateLimitWaitMs: number;
  readonly maxRetries: number;
  readonly maxSecondaryRetries: number;
  readonly lowWater: number;
  readonly contentPerHour: number;
  readonly contentLowWater: number;
}

/** Request counts by operation. */
export interface GitHubHttpStats {
  readonly requests: number;
  readonly contentRequests: number;
  readonly byOperation: Readonly<Record<string, number>>;
  readonly rateLimitWaits: number;
  readonly retries: number;
}

/** The HTTP client of githubStorage. */
export interface GitHubHttp {
  request(req: GitHubRequest): Promise<GitHubResponse>;
  budget(): RateBudget;
  /** Epoch ms when requests can be sent again, when the primary budget is known to be exhausted. */
  blockedUntil(): number | undefined;
  stats(): GitHubHttpStats;
}

/** True when a failed write may nevertheless have been applied (lost answer). */
export function isAmbiguous(err: unknown): boolean {
  return err instanceof CheckpointError && err.details.ambiguous === true;
}

/** The epoch ms a rate-limited call can be retried at, from a `checkpoint_rate_limited` error. */
export function retryAtOf(err: unknown): number | undefined {
  const v = err instanceof CheckpointError ? err.details.retryAtMs : undefined;
  return typeof v === 'number' ? v : undefined;
}

/**
 * Speaks to GitHub through the injected `fetch`: sets the headers, tracks the rate
 * limit from every response, paces content-generating requests, waits out rate limits
 * that reset soon enough, retries idempotent requests on 5xx and network errors, and
 * turns every failure into a secret-free `CheckpointError`.
 */
export function createGitHubHttp(options: GitHubHttpOptions): GitHubHttp {
  const h = createHttpState(options);
  const { clock } = options;
  return {
    request: (req) => request(h, req),
    budget: () => h.tracker.budget(clock.now()),
    blockedUntil: () => h.tracker.exhaustedUntil(clock.now()),
    stats: () => ({
      requests: h.tracker.calls,
      contentRequests: h.contentRequests,
      byOperation: { ...h.byOperation },
      rateLimitWaits: h.rateLimitWaits,
      retries: h.retries,
    }),
  };
}
