import type { ReasonCode } from './reason-codes.js';

/** Structured, secret-free context attached to a {@link CheckpointError}. */
export type CheckpointErrorDetails = Readonly<Record<string, string | number | boolean | null | readonly string[]>>;

/** Options accepted by the {@link CheckpointError} constructor. */
export interface CheckpointErrorOptions {
  /** The underlying error. Adapters must strip secrets from it before passing it here. */
  cause?: unknown;
  /** Machine-readable context: keys, run ids, JSON paths, counts. Never payload contents or secrets. */
  details?: CheckpointErrorDetails;
}

/**
 * The one error class savepoint throws. Branch on {@link CheckpointError.reasonCode},
 * never on the message: messages may be reworded, codes are stable.
 *
 * @example
 * ```ts
 * try { await storage.put(key, bytes, { ifAbsent: true }); }
 * catch (err) {
 *   if (isCheckpointError(err, 'checkpoint_conflict')) { ... }
 * }
 * ```
 */
export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
  readonly reasonCode: ReasonCode;
  readonly details: CheckpointErrorDetails;

  constructor(reasonCode: ReasonCode, message: string, options: CheckpointErrorOptions = {}) {
    // An error constructor must not throw: a malformed options value is ignored rather than raising a TypeError.
    const opts: CheckpointErrorOptions = typeof options === 'object' && options !== null ? options : {};
    super(`${reasonCode}: ${message}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.reasonCode = reasonCode;
    this.details = Object.freeze({ ...(typeof opts.details === 'object' && opts.details !== null ? opts.details : {}) });
  }

  /** A plain, JSON-safe view for logs and `--json` output. */
  toJSON(): { name: string; reasonCode: ReasonCode; message: string; details: CheckpointErrorDetails } {
    return { name: this.name, reasonCode: this.reasonCode, message: this.message, details: this.details };
  }
}

/** True when `err` is a {@link CheckpointError}, optionally with the given reason code. */
export function isCheckpointError(err: unknown, reasonCode?: ReasonCode): err is CheckpointError {
  return err instanceof CheckpointError && (reasonCode === undefined || err.reasonCode === reasonCode);
}

/**
 * Wraps any thrown value into a {@link CheckpointError} with `reasonCode`, unless it already is one.
 * The wrapped error's message is kept as `cause` only; callers that might hold secrets in
 * messages (HTTP adapters) must scrub before calling this.
 */
export function toCheckpointError(
  err: unknown,
  reasonCode: ReasonCode,
  message: string,
  details?: CheckpointErrorDetails,
): CheckpointError {
  if (err instanceof CheckpointError) return err;
  return new CheckpointError(reasonCode, message, { cause: err, ...(details ? { details } : {}) });
}

/** `checkpoint_conflict` for a failed condition (`ifAbsent`, `ifVersion`, a check) on `key`: the message every store gives. */
export function conditionFailed(key: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });
}
