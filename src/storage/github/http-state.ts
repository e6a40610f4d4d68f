import { createRateLimitTracker, type RateLimitTracker } from './rate-limit.js';
import type { GitHubHttpOptions } from './http.js';

/** What the HTTP client of githubStorage keeps between requests: the rate-limit tracker, counters, and the write pacing. */
export interface HttpState {
  readonly options: GitHubHttpOptions;
  /** The API URL without a trailing slash. */
  readonly base: string;
  /** The rate limits as the response headers (and our own count of content requests) report them. */
  readonly tracker: RateLimitTracker;
  /** Requests sent, by GitHub operation id. */
  readonly byOperation: Record<string, number>;
  /** Content-generating requests sent (POST, PATCH, PUT, DELETE). */
  contentRequests: number;
  /** Rate limits waited out. */
  rateLimitWaits: number;
  /** Requests sent again after a 5xx, a network error or a timeout. */
  retries: number;
  /** When the last content-generating request went out. */
  lastWriteAt: number;
  /** The chain content-generating requests wait in, one `minWriteIntervalMs` apart. */
  pacing: Promise<void>;
  /** Secondary rate limits met in a row (each waits twice as long). */
  secondaryStreak: number;
  /** The reset time of the window the `rate_limit_low` event was sent for (once per window). */
  lowWarnedFor: number;
}

export function createHttpState(options: GitHubHttpOptions): HttpState {
  return {
    options,
    base: options.baseUrl.replace(/\/+$/, ''),
    tracker: createRateLimitTracker({
      lowWater: options.lowWater,
      contentPerHour: options.contentPerHour,
      contentLowWater: options.contentLowWater,
      now: options.clock.now(),
    }),
    byOperation: {},
    contentRequests: 0,
    rateLimitWaits: 0,
    retries: 0,
    lastWriteAt: -Infinity,
    pacing: Promise.resolve(),
    secondaryStreak: 0,
    lowWarnedFor: -1,
  };
}
