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

/**
 * A safe stand-in for an error from `fetch`: only its name and scrubbed message, never
 * the original object (which may reference the request, its headers and the token).
 */
export function safeCause(err: unknown, scrubber: Scrubber): Error {
  const name = err instanceof Error ? err.name : 'Error';
  const inner = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  const message = err instanceof Error ? `${err.message}${inner}` : String(err);
  const safe = new Error(scrubber.scrub(message));
  safe.name = name;
  return safe;
}
