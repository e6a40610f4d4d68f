import type { GitHubOperationId } from './schemas.js';

/**
 * A fault the emulator can inject into one request. Faults model what savepoint meets
 * on the real GitHub: other writers, rate limits, flaky infrastructure, replication lag.
 */
export type EmulatorFault =
  /** Answer with this status (5xx by default, GitHub-style body). `landed: true` applies the request first: the "timed out but it happened" case. */
  | { readonly kind: 'status'; readonly status: number; readonly message?: string; readonly landed?: boolean }
  /** Drop the connection without an answer (the client sees a network error). `landed: true` applies the request first. */
  | { readonly kind: 'network-error'; readonly landed?: boolean }
  /** Primary rate limit: the hour's budget is exhausted (remaining 0 until the window resets) and this request is refused. */
  | { readonly kind: 'primary-rate-limit'; readonly status?: 403 | 429 }
  /** Secondary rate limit: refused with GitHub's secondary-limit message, with a `retry-after` header when `retryAfterSec` is given. */
  | { readonly kind: 'secondary-rate-limit'; readonly status?: 403 | 429; readonly retryAfterSec?: number }
  /** Another writer commits to the branch just before this request is handled (a head that moves between a read and a write). */
  | { readonly kind: 'move-head'; readonly path?: string }
  /** Answer after `ms` real milliseconds. With `landed` (default true) the request is applied before the wait, so a client that times out meets a write that happened. */
  | { readonly kind: 'delay'; readonly ms: number; readonly landed?: boolean }
  /** A read that names the branch answers from the commit `commitsBack` first-parent steps behind the head (replication lag). Reads by sha are never stale. */
  | { readonly kind: 'stale-read'; readonly commitsBack?: number }
  /** The blob stored by this write differs from the bytes sent (one byte flipped): what write-then-verify exists to catch. */
  | { readonly kind: 'corrupt-write' };

/** The request a fault rule is matched against. */
export interface FaultRequestInfo {
  readonly operation: GitHubOperationId | 'unknown';
  readonly method: string;
  /** URL path and query, e.g. `/repos/o/r/contents/a.json?ref=main`. */
  readonly path: string;
}

/** When a fault fires. */
export interface FaultRule {
  readonly fault: EmulatorFault;
  /** Only requests of these operations (all when absent). */
  readonly operation?: GitHubOperationId | readonly GitHubOperationId[];
  /** Only requests for which this returns true. */
  readonly when?: (request: FaultRequestInfo) => boolean;
  /** Let this many matching requests through first. @default 0 */
  readonly skip?: number;
  /** Fire this many times, then retire. @default 1 */
  readonly times?: number;
}

/** A rule added with {@link EmulatorFaults.add}. */
export interface FaultHandle {
  /** How many times it fired so far. */
  readonly fired: number;
  /** Retires the rule. */
  remove(): void;
}

/** The fault schedule of an emulator. */
export interface EmulatorFaults {
  /** Adds a rule; rules are matched in the order added, and at most one fault of each kind fires per request. */
  add(rule: FaultRule): FaultHandle;
  /** Removes every rule. */
  clear(): void;
  /** Rules that have not retired. */
  readonly active: number;
  /** Every fault fired so far, in order. */
  readonly history: readonly { readonly kind: EmulatorFault['kind']; readonly operation: string; readonly seq: number }[];
}

interface LiveRule {
  readonly rule: FaultRule;
  skipped: number;
  fired: number;
  removed: boolean;
}

/** @internal The emulator's side of the schedule. */
export interface FaultSchedule extends EmulatorFaults {
  /** The faults that fire for this request (one per kind), consuming their rules. */
  take(request: FaultRequestInfo, seq: number): EmulatorFault[];
}

/** @internal */
export function createFaultSchedule(): FaultSchedule {
  const rules: LiveRule[] = [];
  const history: { kind: EmulatorFault['kind']; operation: string; seq: number }[] = [];
  const live = (r: LiveRule): boolean => !r.removed && r.fired < (r.rule.times ?? 1);
  return {
    add(rule) {
      const entry: LiveRule = { rule, skipped: 0, fired: 0, removed: false };
      rules.push(entry);
      return {
        get fired() {
          return entry.fired;
        },
        remove() {
          entry.removed = true;
        },
      };
    },
    clear() {
      for (const r of rules) r.removed = true;
      rules.length = 0;
    },
    get active() {
      return rules.filter(live).length;
    },
    history,
    take(request, seq) {
      const out: EmulatorFault[] = [];
      const kinds = new Set<string>();
      for (const r of rules) {
        if (!live(r) || kinds.has(r.rule.fault.kind)) continue;
        const ops = r.rule.operation;
        if (
          ops !== undefined &&
          request.operation !== 'unknown' &&
          !(typeof ops === 'string' ? ops === request.operation : ops.includes(request.operation))
        )
          continue;
        if (ops !== undefined && request.operation === 'unknown') continue;
        if (r.rule.when && !r.rule.when(request)) continue;
        if (r.skipped < (r.rule.skip ?? 0)) {
          r.skipped++;
          continue;
        }
        r.fired++;
        kinds.add(r.rule.fault.kind);
        out.push(r.rule.fault);
        history.push({ kind: r.rule.fault.kind, operation: request.operation, seq });
      }
      return out;
    },
  };
}
