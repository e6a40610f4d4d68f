import { sleep } from '../../contract/clock.js';
import { CheckpointError, type CheckpointErrorDetails } from '../../contract/errors.js';
import type { GitHubRequest, GitHubResponse } from './http.js';
import { sendOnce, type RawAnswer } from './http-send.js';
import type { HttpState } from './http-state.js';
import { classifyRateLimit, rateLimitWaitMs, RESET_BUFFER_MS, type RateLimitKind } from './rate-limit.js';
import { safeCause } from './secrets.js';

/** Retries spent on one request so far. */
interface Tries {
  /** After a 5xx, a network error or a timeout. */
  attempt: number;
  /** After a rate limit. */
  rateAttempts: number;
}

function fail(
  h: HttpState,
  reasonCode: 'checkpoint_storage_unavailable' | 'checkpoint_rate_limited',
  message: string,
  details: CheckpointErrorDetails,
  cause?: unknown,
): CheckpointError {
  const { scrubber } = h.options;
  return new CheckpointError(reasonCode, scrubber.scrub(message), {
    details,
    ...(cause !== undefined ? { cause: safeCause(cause, scrubber) } : {}),
  });
}

/** Waits until the last content-generating request is `minWriteIntervalMs` old (requests queue behind each other). */
function pace(h: HttpState): Promise<void> {
  const { clock } = h.options;
  const next = h.pacing.then(async () => {
    const wait = h.lastWriteAt + h.options.minWriteIntervalMs - clock.now();
    if (wait > 0) await sleep(clock, wait);
    h.lastWriteAt = clock.now();
  });
  h.pacing = next.catch(() => undefined);
  return next;
}

/** Waits out a rate limit, or fails with `checkpoint_rate_limited` when it lasts longer than `maxRateLimitWaitMs`. */
async function waitOrThrow(h: HttpState, kind: RateLimitKind, waitMs: number, operation: string): Promise<void> {
  const { clock, maxRateLimitWaitMs } = h.options;
  const retryAtMs = clock.now() + waitMs;
  if (waitMs > maxRateLimitWaitMs) {
    throw fail(
      h,
      'checkpoint_rate_limited',
      `GitHub ${kind} rate limit: ${operation} can be retried in ${Math.ceil(waitMs / 1000)} s, longer than the ${Math.round(maxRateLimitWaitMs / 1000)} s this adapter waits`,
      {
        operation,
        kind,
        retryAtMs,
      },
    );
  }
  h.rateLimitWaits++;
  h.options.emit({ type: 'rate_limit_wait', level: 'warn', kind, waitMs, operation });
  await sleep(clock, waitMs);
}

/** Sends a request until it gets an answer the caller must interpret: rate limits waited out, idempotent requests retried. */
export async function request(h: HttpState, req: GitHubRequest): Promise<GitHubResponse> {
  const { clock } = h.options;
  const tries: Tries = { attempt: 0, rateAttempts: 0 };
  for (;;) {
    const blocked = h.tracker.exhaustedUntil(clock.now());
    if (blocked !== undefined) await waitOrThrow(h, 'primary', blocked - clock.now() + RESET_BUFFER_MS, req.operation);
    if (req.method !== 'GET') await pace(h);
    let res: RawAnswer;
    try {
      res = await sendOnce(h, req);
    } catch (err) {
      await retryAfterNoAnswer(h, req, tries, err);
      continue;
    }
    const answer = await interpret(h, req, tries, res);
    if (answer !== undefined) return answer;
  }
}

/** No answer (timeout, network error): waits before an idempotent request is sent again, else fails (ambiguous for a write). */
async function retryAfterNoAnswer(h: HttpState, req: GitHubRequest, tries: Tries, err: unknown): Promise<void> {
  const { options } = h;
  const timeout = err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
  const reason = timeout ? 'timeout' : 'network';
  if (req.idempotent && tries.attempt < options.maxRetries) {
    tries.attempt++;
    h.retries++;
    options.emit({ type: 'request_retry', level: 'info', operation: req.operation, attempt: tries.attempt, reason });
    await sleep(options.clock, 500 * 2 ** (tries.attempt - 1));
    return;
  }
  throw fail(
    h,
    'checkpoint_storage_unavailable',
    `GitHub ${req.operation} failed: ${timeout ? `no answer within ${options.requestTimeoutMs} ms` : 'network error'}`,
    {
      operation: req.operation,
      ambiguous: !req.idempotent,
      reason,
    },
    err,
  );
}

/** Reads an answer: the response, or undefined when it is sent again (a rate limit waited out, a retried 5xx); refusals and failures throw. */
async function interpret(h: HttpState, req: GitHubRequest, tries: Tries, res: RawAnswer): Promise<GitHubResponse | undefined> {
  const { options } = h;
  const { clock } = options;
  h.tracker.observe(res.headers, clock.now());
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
  const message = options.scrubber.scrub(
    typeof (json as { message?: unknown } | undefined)?.message === 'string' ? (json as { message: string }).message : '',
  );
  warnIfLow(h);

  const kind = classifyRateLimit(res.status, res.headers, message);
  if (kind) {
    if (kind === 'secondary') h.secondaryStreak++;
    const waitMs = rateLimitWaitMs(kind, res.headers, clock.now(), Math.max(0, h.secondaryStreak - 1));
    tries.rateAttempts++;
    if (tries.rateAttempts > (kind === 'secondary' ? options.maxSecondaryRetries : 2)) {
      throw fail(h, 'checkpoint_rate_limited', `GitHub ${kind} rate limit persists for ${req.operation}`, {
        operation: req.operation,
        kind,
        retryAtMs: clock.now() + waitMs,
        status: res.status,
      });
    }
    await waitOrThrow(h, kind, waitMs, req.operation);
    return undefined;
  }
  if (res.status >= 200 && res.status < 300) h.secondaryStreak = 0;
  if (res.status === 401 || res.status === 403) {
    throw fail(
      h,
      'checkpoint_storage_unavailable',
      `GitHub refused ${req.operation} (${res.status}${message ? `: ${message}` : ''}); check the token and its permissions (Contents: read and write)`,
      {
        operation: req.operation,
        status: res.status,
      },
    );
  }
  if (res.status >= 500) {
    if (req.idempotent && tries.attempt < options.maxRetries) {
      tries.attempt++;
      h.retries++;
      options.emit({
        type: 'request_retry',
        level: 'info',
        operation: req.operation,
        attempt: tries.attempt,
        reason: 'server_error',
        status: res.status,
      });
      await sleep(clock, 500 * 2 ** (tries.attempt - 1));
      return undefined;
    }
    throw fail(h, 'checkpoint_storage_unavailable', `GitHub ${req.operation} failed with ${res.status}${message ? `: ${message}` : ''}`, {
      operation: req.operation,
      status: res.status,
      ambiguous: !req.idempotent,
    });
  }
  return { status: res.status, headers: res.headers, json, ...(raw ? { bytes } : {}), message };
}

/** Sends `rate_limit_low` once per window when fewer than the low-water mark of requests remain. */
function warnIfLow(h: HttpState): void {
  const budget = h.tracker.budget(h.options.clock.now());
  if (budget.remaining < h.options.lowWater && h.lowWarnedFor !== budget.resetAtMs) {
    h.lowWarnedFor = budget.resetAtMs;
    h.options.emit({
      type: 'rate_limit_low',
      level: 'warn',
      remaining: budget.remaining,
      limit: budget.limit,
      resetAtMs: budget.resetAtMs,
      message: `Rate limit low: ${budget.remaining} remaining`,
    });
  }
}
