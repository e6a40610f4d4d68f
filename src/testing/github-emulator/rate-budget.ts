import type { EmulatorServerState } from './emulator-state.js';
import { errorReply, type Reply } from './handlers.js';
import type { EmulatorRateLimit } from './server.js';

const PRIMARY_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';

/** Starts a new primary window once the current one is over. */
export function roll(emu: EmulatorServerState): void {
  const { budget } = emu;
  const now = emu.clock.now();
  if (now >= budget.resetAtMs) {
    budget.remaining = budget.limit;
    budget.used = 0;
    budget.resetAtMs = now + emu.windowMs;
  }
}

export function rateHeaders(emu: EmulatorServerState): Record<string, string> {
  const { budget } = emu;
  return {
    'x-ratelimit-limit': String(budget.limit),
    'x-ratelimit-remaining': String(budget.remaining),
    'x-ratelimit-reset': String(Math.ceil(budget.resetAtMs / 1000)),
    'x-ratelimit-used': String(budget.used),
    'x-ratelimit-resource': 'core',
  };
}

/** GitHub's `x-github-request-id`, from the number of requests received so far. */
export const requestId = (emu: EmulatorServerState): string => `EMU:${emu.seq.toString(16).toUpperCase().padStart(6, '0')}`;

export function primaryReply(emu: EmulatorServerState, status: number): Reply {
  return errorReply(
    status,
    `API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID ${requestId(emu)} and timestamp ${new Date(emu.clock.now()).toISOString()}.`,
    PRIMARY_DOCS,
  );
}

export function secondaryReply(emu: EmulatorServerState, status: number, retryAfterSec: number | undefined): Reply {
  const reply = errorReply(
    status,
    `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${requestId(emu)}.`,
    'https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
  );
  return retryAfterSec === undefined ? reply : { ...reply, headers: { 'retry-after': String(retryAfterSec) } };
}

/** The refusal a request meets at the limits (primary budget spent, secondary per-minute or per-hour limit), or undefined. */
export function limitReply(emu: EmulatorServerState, contentCreating: boolean): Reply | undefined {
  const { secondary, created } = emu;
  if (emu.budget.remaining <= 0) return primaryReply(emu, 403);
  if (secondary && contentCreating) {
    const now = emu.clock.now();
    while (created.length > 0 && created[0]! <= now - 3_600_000) created.shift();
    const lastMinute = created.filter((t) => t > now - 60_000).length;
    if (lastMinute >= secondary.perMinute || created.length >= secondary.perHour) {
      const oldest = lastMinute >= secondary.perMinute ? created[created.length - lastMinute]! + 60_000 : created[0]! + 3_600_000;
      return secondaryReply(emu, 403, Math.max(1, Math.ceil((oldest - now) / 1000)));
    }
  }
  return undefined;
}

/** The emulator's primary window as `GitHubEmulator.rateLimit` shows it: read after rolling over, settable by tests. */
export function rateLimitView(emu: EmulatorServerState): EmulatorRateLimit {
  const { budget } = emu;
  return {
    get limit() {
      roll(emu);
      return budget.limit;
    },
    get remaining() {
      roll(emu);
      return budget.remaining;
    },
    get resetAtMs() {
      roll(emu);
      return budget.resetAtMs;
    },
    get used() {
      return budget.used;
    },
    set(values) {
      if (values.limit !== undefined) budget.limit = values.limit;
      if (values.remaining !== undefined) budget.remaining = values.remaining;
      if (values.resetAtMs !== undefined) budget.resetAtMs = values.resetAtMs;
    },
  };
}
