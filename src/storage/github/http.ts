import { sleep, type Clock } from '../../model/clock.js';
import { CheckpointError, type CheckpointErrorDetails } from '../../model/errors.js';
import type { RateBudget } from '../adapter.js';
import type { GitHubStorageEventListener } from './events.js';
import { classifyRateLimit, rateLimitWaitMs, RESET_BUFFER_MS, createRateLimitTracker, type RateLimitKind } from './rate-limit.js';
import { safeCause, type Scrubber } from './secrets.js';

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
  const { clock, scrubber, emit } = options;
  const tracker = createRateLimitTracker({ lowWater: options.lowWater, contentPerHour: options.contentPerHour, contentLowWater: options.contentLowWater, now: clock.now() });
  const byOperation: Record<string, number> = {};
  let contentRequests = 0;
  let rateLimitWaits = 0;
  let retries = 0;
  let lastWriteAt = -Infinity;
  let pacing: Promise<void> = Promise.resolve();
  let secondaryStreak = 0;
  let lowWarnedFor = -1;
  const base = options.baseUrl.replace(/\/+$/, '');

  const fail = (reasonCode: 'checkpoint_storage_unavailable' | 'checkpoint_rate_limited', message: string, details: CheckpointErrorDetails, cause?: unknown): CheckpointError =>
    new CheckpointError(reasonCode, scrubber.scrub(message), { details, ...(cause !== undefined ? { cause: safeCause(cause, scrubber) } : {}) });

  const pace = (): Promise<void> => {
    const next = pacing.then(async () => {
      const wait = lastWriteAt + options.minWriteIntervalMs - clock.now();
      if (wait > 0) await sleep(clock, wait);
      lastWriteAt = clock.now();
    });
    pacing = next.catch(() => undefined);
    return next;
  };

  const waitOrThrow = async (kind: RateLimitKind, waitMs: number, operation: string): Promise<void> => {
    const retryAtMs = clock.now() + waitMs;
    if (waitMs > options.maxRateLimitWaitMs) {
      throw fail('checkpoint_rate_limited', `GitHub ${kind} rate limit: ${operation} can be retried in ${Math.ceil(waitMs / 1000)} s, longer than the ${Math.round(options.maxRateLimitWaitMs / 1000)} s this adapter waits`, {
        operation,
        kind,
        retryAtMs,
      });
    }
    rateLimitWaits++;
    emit({ type: 'rate_limit_wait', level: 'warn', kind, waitMs, operation });
    await sleep(clock, waitMs);
  };

  async function once(req: GitHubRequest): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
    const token = typeof options.token === 'function' ? await options.token() : options.token;
    scrubber.remember(token);
    const query = Object.entries(req.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined);
    const url = `${base}${req.path}${query.length > 0 ? `?${new URLSearchParams(query).toString()}` : ''}`;
    const headers: Record<string, string> = {
      accept: req.accept ?? 'application/vnd.github+json',
      authorization: `Bearer ${token}`,
      'x-github-api-version': '2022-11-28',
      'user-agent': options.userAgent,
    };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    const controller = new AbortController();
    // A watchdog on real network I/O, not a wait: it runs on the platform timer, not the Clock.
    const timer = globalThis.setTimeout(() => controller.abort(), options.requestTimeoutMs) as unknown as { unref?: () => void };
    timer.unref?.();
    tracker.countCall();
    byOperation[req.operation] = (byOperation[req.operation] ?? 0) + 1;
    if (req.method !== 'GET') {
      contentRequests++;
      tracker.noteContentRequest(clock.now());
    }
    try {
      const res = await options.fetch(url, {
        method: req.method,
        headers,
        ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
        signal: controller.signal,
      });
      // Read the body under the same watchdog: a slow body is as lost as a slow status line.
      return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
    } finally {
      globalThis.clearTimeout(timer as Parameters<typeof globalThis.clearTimeout>[0]);
    }
  }

  async function request(req: GitHubRequest): Promise<GitHubResponse> {
    let attempt = 0;
    let rateAttempts = 0;
    for (;;) {
      const blocked = tracker.exhaustedUntil(clock.now());
      if (blocked !== undefined) await waitOrThrow('primary', blocked - clock.now() + RESET_BUFFER_MS, req.operation);
      if (req.method !== 'GET') await pace();
      let res: { status: number; headers: Headers; bytes: Uint8Array };
      try {
        res = await once(req);
      } catch (err) {
        const timeout = err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
        const reason = timeout ? 'timeout' : 'network';
        if (req.idempotent && attempt < options.maxRetries) {
          attempt++;
          retries++;
          emit({ type: 'request_retry', level: 'info', operation: req.operation, attempt, reason });
          await sleep(clock, 500 * 2 ** (attempt - 1));
          continue;
        }
        throw fail('checkpoint_storage_unavailable', `GitHub ${req.operation} failed: ${timeout ? `no answer within ${options.requestTimeoutMs} ms` : 'network error'}`, {
          operation: req.operation,
          ambiguous: !req.idempotent,
          reason,
        }, err);
      }
      tracker.observe(res.headers, clock.now());
      const raw = req.raw && res.status === 200;
      const bytes = res.bytes;
      let json: unknown;
      if (!raw && bytes.length > 0) {
        try {
          json = JSON.parse(new TextDecoder().decode(bytes));
        } catch {
          json = undefined;
        }
      }
      const message = scrubber.scrub(typeof (json as { message?: unknown } | undefined)?.message === 'string' ? (json as { message: string }).message : '');
      const budget = tracker.budget(clock.now());
      if (budget.remaining < options.lowWater && lowWarnedFor !== budget.resetAtMs) {
        lowWarnedFor = budget.resetAtMs;
        emit({ type: 'rate_limit_low', level: 'warn', remaining: budget.remaining, limit: budget.limit, resetAtMs: budget.resetAtMs, message: `Rate limit low: ${budget.remaining} remaining` });
      }

      const kind = classifyRateLimit(res.status, res.headers, message);
      if (kind) {
        if (kind === 'secondary') secondaryStreak++;
        const waitMs = rateLimitWaitMs(kind, res.headers, clock.now(), Math.max(0, secondaryStreak - 1));
        rateAttempts++;
        if (rateAttempts > (kind === 'secondary' ? options.maxSecondaryRetries : 2)) {
          throw fail('checkpoint_rate_limited', `GitHub ${kind} rate limit persists for ${req.operation}`, { operation: req.operation, kind, retryAtMs: clock.now() + waitMs, status: res.status });
        }
        await waitOrThrow(kind, waitMs, req.operation);
        continue;
      }
      if (res.status >= 200 && res.status < 300) secondaryStreak = 0;
      if (res.status === 401 || res.status === 403) {
        throw fail('checkpoint_storage_unavailable', `GitHub refused ${req.operation} (${res.status}${message ? `: ${message}` : ''}); check the token and its permissions (Contents: read and write)`, {
          operation: req.operation,
          status: res.status,
        });
      }
      if (res.status >= 500) {
        if (req.idempotent && attempt < options.maxRetries) {
          attempt++;
          retries++;
          emit({ type: 'request_retry', level: 'info', operation: req.operation, attempt, reason: 'server_error', status: res.status });
          await sleep(clock, 500 * 2 ** (attempt - 1));
          continue;
        }
        throw fail('checkpoint_storage_unavailable', `GitHub ${req.operation} failed with ${res.status}${message ? `: ${message}` : ''}`, {
          operation: req.operation,
          status: res.status,
          ambiguous: !req.idempotent,
        });
      }
      return { status: res.status, headers: res.headers, json, ...(raw ? { bytes } : {}), message };
    }
  }

  return {
    request,
    budget: () => tracker.budget(clock.now()),
    blockedUntil: () => tracker.exhaustedUntil(clock.now()),
    stats: () => ({ requests: tracker.calls, contentRequests, byOperation: { ...byOperation }, rateLimitWaits, retries }),
  };
}
