import { CheckpointError } from '../../contract/errors.js';
import type { ReasonCode } from '../../contract/reason-codes.js';

/**
 * Keeps tokens out of everything githubStorage throws or emits. Messages are built from
 * savepoint's own words plus GitHub's `message` field; both pass through {@link scrub}
 * before they reach an error, an event or a `cause`.
 */
const TOKEN_PATTERNS = [
  /\bgh[pousr]_[A-Za-z0-9]{16,}\b/g, // classic and app tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g, // fine-grained tokens
  /\b(?:Bearer|token|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, // anything that looks like an Authorization value
];

/** A scrubber that also knows the literal secrets in `secrets`. */
export interface Scrubber {
  /** Registers a secret to redact (a token fetched at run time, say). */
  remember(secret: string): void;
  /** `text` with every known secret and token-shaped string replaced by `[redacted]`. */
  scrub(text: string): string;
}

/** Creates a scrubber. */
export function createScrubber(initial: readonly string[] = []): Scrubber {
  const secrets = new Set<string>();
  const remember = (s: string): void => {
    if (s.length >= 4) secrets.add(s);
  };
  initial.forEach(remember);
  return {
    remember,
    scrub(text) {
      let out = text;
      for (const s of secrets) out = out.split(s).join('[redacted]');
      for (const p of TOKEN_PATTERNS) out = out.replace(p, '[redacted]');
      return out;
    },
  };
}

/** How deep cause chains, AggregateError lists and details are copied; deeper parts are dropped. */
const MAX_DEPTH = 6;

function describeUnknown(value: unknown): string {
  try {
    return String(value);
  } catch {
    return 'unprintable value';
  }
}

/**
 * A safe stand-in for an error from `fetch` (or any cause): a new `Error` made only of
 * scrubbed strings — message, name, stack, a string `code`, its cause chain and an
 * AggregateError's `errors`, copied as far as {@link MAX_DEPTH} — never the original object
 * (which may reference the request, its headers and the token).
 */
export function safeCause(err: unknown, scrubber: Scrubber, depth = 0): Error {
  if (!(err instanceof Error)) return new Error(scrubber.scrub(describeUnknown(err)));
  const read = (k: string): unknown => {
    try {
      return (err as unknown as Record<string, unknown>)[k];
    } catch {
      return undefined; // a throwing getter is not data
    }
  };
  const name = read('name');
  const message = read('message');
  const stack = read('stack');
  const code = read('code');
  const cause = read('cause');
  const errors = read('errors');
  const nested = depth + 1 < MAX_DEPTH;
  const safe: Error & { code?: string; errors?: Error[] } =
    err instanceof AggregateError && Array.isArray(errors)
      ? new AggregateError(
          nested ? errors.map((e: unknown) => safeCause(e, scrubber, depth + 1)) : [],
          scrubber.scrub(typeof message === 'string' ? message : ''),
        )
      : new Error(
          scrubber.scrub(typeof message === 'string' ? message : ''),
          nested && cause !== undefined ? { cause: safeCause(cause, scrubber, depth + 1) } : undefined,
        );
  if (err instanceof AggregateError && nested && cause !== undefined) safe.cause = safeCause(cause, scrubber, depth + 1);
  safe.name = typeof name === 'string' ? scrubber.scrub(name) : 'Error';
  safe.stack = typeof stack === 'string' ? scrubber.scrub(stack) : `${safe.name}: ${safe.message}`;
  if (typeof code === 'string' || typeof code === 'number') safe.code = scrubber.scrub(String(code));
  return safe;
}

/** A copy of a JSON-like value (event fields, error details) with every string scrubbed. */
export function scrubValue<T>(value: T, scrubber: Scrubber, depth = 0): T {
  if (typeof value === 'string') return scrubber.scrub(value) as T;
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v: unknown) => scrubValue(v, scrubber, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[scrubber.scrub(k)] = scrubValue(v, scrubber, depth + 1);
  return out as T;
}

/**
 * What githubStorage lets out of a public call: a `CheckpointError` whose every string —
 * message, stack, details (deep), the cause chain — is scrubbed. Anything that is not a
 * CheckpointError (a bug, a throwing `fetch` that escaped) becomes
 * `checkpoint_storage_unavailable` with a safe cause.
 */
export function surfaceError(err: unknown, scrubber: Scrubber): CheckpointError {
  const source = err instanceof CheckpointError ? err : undefined;
  const reasonCode: ReasonCode = source?.reasonCode ?? 'checkpoint_storage_unavailable';
  const prefix = `${reasonCode}: `;
  const message = source
    ? source.message.startsWith(prefix)
      ? source.message.slice(prefix.length)
      : source.message
    : `github storage failed: ${err instanceof Error ? err.message : describeUnknown(err)}`;
  const cause = source ? source.cause : err;
  const out = new CheckpointError(reasonCode, scrubber.scrub(message), {
    details: scrubValue(source?.details ?? {}, scrubber),
    ...(cause !== undefined ? { cause: safeCause(cause, scrubber) } : {}),
  });
  if (source?.stack) out.stack = scrubber.scrub(source.stack);
  return out;
}
