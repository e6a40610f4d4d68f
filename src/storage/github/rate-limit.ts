import type { RateBudget } from '../../contract/storage.js';

/** phased-workflow-github.md `on_403_rate_limit`: wait until reset plus 5 s. */
export const RESET_BUFFER_MS = 5000;
/** GitHub: "wait for at least one minute before retrying" a secondary limit without `retry-after`. */
export const SECONDARY_MIN_WAIT_MS = 60_000;

/** Which limit refused a request. */
export type RateLimitKind = 'primary' | 'secondary';

/**
 * Tracks the primary budget from every response's `x-ratelimit-*` headers (the spec's
 * `rate_limit_tracking`: last_remaining, last_reset, calls_this_run) and the
 * content-generating requests this adapter sent in the last hour (GitHub's secondary
 * "500 content-generating requests per hour", which no header reports).
 */
export interface RateLimitTracker {
  /** Reads the headers of a response. */
  observe(headers: Headers, now: number): void;
  /** Records a content-generating request sent at `now`. */
  noteContentRequest(now: number): void;
  /** The current budget; `low` below either low-water mark. */
  budget(now: number): RateBudget;
  /** When the primary budget is known to be exhausted, the epoch ms it resets; else undefined. */
  exhaustedUntil(now: number): number | undefined;
  /** Requests sent by this adapter (`calls_this_run`). */
  readonly calls: number;
  countCall(): void;
}

/** Options of {@link createRateLimitTracker}. */
export interface RateLimitTrackerOptions {
  readonly lowWater: number;
  readonly contentPerHour: number;
  readonly contentLowWater: number;
  readonly now: number;
}

/** Creates a tracker; until the first response it assumes GitHub's authenticated default of 5,000 per hour. */
export function createRateLimitTracker(options: RateLimitTrackerOptions): RateLimitTracker {
  let limit = 5000;
  let remaining = 5000;
  let resetAtMs = options.now + 3_600_000;
  let calls = 0;
  const content: number[] = [];
  const prune = (now: number): void => {
    while (content.length > 0 && content[0]! <= now - 3_600_000) content.shift();
  };
  return {
    observe(headers, now) {
      const resource = headers.get('x-ratelimit-resource');
      if (resource !== null && resource !== 'core') return;
      const r = Number(headers.get('x-ratelimit-remaining') ?? NaN);
      const l = Number(headers.get('x-ratelimit-limit') ?? NaN);
      const reset = Number(headers.get('x-ratelimit-reset') ?? NaN);
      if (Number.isFinite(l) && l > 0) limit = l;
      if (Number.isFinite(r)) remaining = Math.max(0, r);
      if (Number.isFinite(reset) && reset > 0) resetAtMs = reset * 1000;
      else if (now >= resetAtMs) resetAtMs = now + 3_600_000;
    },
    noteContentRequest(now) {
      prune(now);
      content.push(now);
    },
    budget(now) {
      prune(now);
      // A window that has passed is full again even before the next response says so.
      const r = now >= resetAtMs ? limit : remaining;
      const contentLeft = options.contentPerHour - content.length;
      return { remaining: r, limit, resetAtMs, low: r < options.lowWater || contentLeft < options.contentLowWater };
    },
    exhaustedUntil(now) {
      return remaining <= 0 && now < resetAtMs ? resetAtMs : undefined;
    },
    get calls() {
      return calls;
    },
    countCall() {
      calls++;
    },
  };
}

/** Decides whether a 403/429 is a primary limit, a secondary limit, or a plain refusal. */
export function classifyRateLimit(status: number, headers: Headers, message: string): RateLimitKind | undefined {
  if (status !== 403 && status !== 429) return undefined;
  const text = message.toLowerCase();
  if (text.includes('secondary rate limit') || text.includes('abuse')) return 'secondary';
  if (headers.get('retry-after') !== null) return 'secondary';
  if (headers.get('x-ratelimit-remaining') === '0') return 'primary';
  if (text.includes('rate limit')) return 'primary'; // the spec's detection: "HTTP 403 with 'rate limit' in response body"
  return status === 429 ? 'secondary' : undefined;
}

/**
 * How long to wait before retrying a refused request, per GitHub's guidance: a
 * `retry-after` header wins; else an exhausted primary budget waits until its reset (+5 s,
 * spec); else a secondary limit waits at least a minute, doubling with each repeat.
 */
export function rateLimitWaitMs(kind: RateLimitKind, headers: Headers, now: number, secondaryStreak: number): number {
  const retryAfter = Number(headers.get('retry-after') ?? NaN);
  if (Number.isFinite(retryAfter) && retryAfter >= 0) return retryAfter * 1000;
  const reset = Number(headers.get('x-ratelimit-reset') ?? NaN);
  if ((kind === 'primary' || headers.get('x-ratelimit-remaining') === '0') && Number.isFinite(reset))
    return Math.max(0, reset * 1000 - now + RESET_BUFFER_MS);
  if (kind === 'primary') return SECONDARY_MIN_WAIT_MS;
  return SECONDARY_MIN_WAIT_MS * 2 ** Math.min(secondaryStreak, 6);
}
