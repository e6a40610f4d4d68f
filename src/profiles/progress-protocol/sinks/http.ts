import { systemClock, type Clock } from '../../../contract/clock.js';
import { CheckpointError } from '../../../contract/errors.js';
import { assertOptionsArgument, assertStringArgument } from '../../../contract/arguments.js';

/** HTTP options shared by the tracker sinks. */
export interface TrackerHttpOptions {
  /**
   * The `fetch` to call (a test server, a proxy agent, an edge runtime's fetch).
   * @default globalThis.fetch
   */
  readonly fetch?: typeof globalThis.fetch;
  /**
   * Abort a request after this long; the step then fails with `timeout after <n> ms`.
   * @default 10000
   */
  readonly timeoutMs?: number;
  /** Clock that runs the timeout (a manual clock in tests). @default systemClock */
  readonly clock?: Clock;
}

/** A tracker answer: status, headers, and the JSON body when there is one. */
export interface TrackerResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly json: unknown;
}

/**
 * A sink failure. `details.cause` is the short text the completion report shows
 * (`HTTP 503`, `timeout after 10000 ms`, `network error`); it never holds a token, a
 * header or a response body.
 */
export function trackerError(
  tracker: string,
  cause: string,
  code: 'checkpoint_tracker_unavailable' | 'checkpoint_rate_limited' = 'checkpoint_tracker_unavailable',
): CheckpointError {
  return new CheckpointError(code, `${tracker}: ${cause}`, { details: { tracker, cause } });
}

/**
 * Sends one request with a timeout. Server errors (5xx) and rate limits (429, or 403 with
 * `x-ratelimit-remaining: 0`) reject; other statuses are returned for the sink to read.
 */
export async function trackerRequest(
  tracker: string,
  url: string,
  init: RequestInit,
  options: TrackerHttpOptions,
): Promise<TrackerResponse> {
  assertStringArgument(tracker, 'trackerRequest', 'tracker');
  assertStringArgument(url, 'trackerRequest', 'url');
  assertOptionsArgument(options, 'trackerRequest');
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const clock = options.clock ?? systemClock;
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(), timeoutMs);
  try {
    let response: Response;
    let text: string;
    try {
      response = await fetchImpl(url, { ...init, signal: controller.signal });
      text = await response.text();
    } catch (err) {
      if (controller.signal.aborted) throw trackerError(tracker, `timeout after ${timeoutMs} ms`);
      const code = (err as { cause?: { code?: unknown } }).cause?.code;
      throw trackerError(tracker, typeof code === 'string' && /^[A-Z_]+$/.test(code) ? `network error ${code}` : 'network error');
    }
    const rateLimited = response.status === 429 || (response.status === 403 && response.headers.get('x-ratelimit-remaining') === '0');
    if (rateLimited) throw trackerError(tracker, `HTTP ${response.status}, rate limited`, 'checkpoint_rate_limited');
    if (response.status >= 500) throw trackerError(tracker, `HTTP ${response.status}`);
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, json };
  } finally {
    clock.clearTimeout(timer);
  }
}
