import { CheckpointError } from './errors.js';
import { assertTimeMsArgument } from './arguments.js';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes drawn from WebCrypto (`globalThis.crypto`, in Node 20, browsers, Deno, Bun,
 * workers) a pool at a time, as nanoid does: one `getRandomValues` call costs about as much
 * as a whole in-memory checkpoint, so drawing 16 bytes per id was a sixth of the writer's
 * CPU. Not nanoid's entry itself: it resolves `node:crypto` in Node builds, which breaks
 * neutral, worker and workerd bundles.
 */
const POOL = new Uint8Array(4096);
let poolAt = POOL.length;

function randomByte(): number {
  if (poolAt >= POOL.length) {
    globalThis.crypto.getRandomValues(POOL);
    poolAt = 0;
  }
  return POOL[poolAt++]!;
}

/**
 * 10 random characters over `[0-9a-z]`. Bytes >= 252 (7 × 36) are drawn again so every
 * character is equally likely.
 */
function suffix(): string {
  let out = '';
  while (out.length < 10) {
    const b = randomByte();
    if (b < 252) out += ALPHABET[b % 36];
  }
  return out;
}

/** Matches a snapshot-lifecycle.md snapshot id: `cp_<timestamp>_<suffix>`. */
export const SNAPSHOT_ID_PATTERN = /^cp_(\d{8}T\d{9}Z)_([0-9a-z]{4,32})$/;

/**
 * A new snapshot id in snapshot-lifecycle.md's `cp_<timestamp>_<suffix>` form: the
 * timestamp is compact UTC with milliseconds (`20251214T153000123Z`) so ids sort by
 * creation time and are safe as file names on every platform; the suffix is a
 * 10-character random suffix over `[0-9a-z]` (case-insensitive file systems cannot collide them).
 */
export function newSnapshotId(createdAtMs: number): string {
  assertTimeMsArgument(createdAtMs, 'newSnapshotId', 'createdAtMs');
  // A writer makes several ids per millisecond: the timestamp part is formatted once per millisecond.
  if (createdAtMs !== compactAtMs) {
    const iso = new Date(createdAtMs).toISOString(); // 2025-12-14T15:30:00.123Z
    compactAt = iso.replace(/[-:]/g, '').replace('.', '');
    compactAtMs = createdAtMs;
  }
  return `cp_${compactAt}_${suffix()}`;
}

let compactAtMs = Number.NaN;
let compactAt = '';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A random UUID v4 (phased-workflow-github.md's id format), from WebCrypto. */
export function newUuidV4(): string {
  return globalThis.crypto.randomUUID();
}

/** True when `value` is a lower-case UUID v4. */
export function isUuidV4(value: string): boolean {
  return UUID_V4.test(value);
}

/** Run ids become one path segment, so they are restricted to a portable file-name alphabet. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Names of the store-wide files that sit beside the run folders
 * (phased-workflow-github.md's `preserved_runs.json` and `retention_log.json`): a run with
 * one of these ids would occupy that file's path, and every prune and `preserveRun` would
 * fail afterwards. Compared case-insensitively (case-insensitive file systems).
 */
export const RESERVED_RUN_IDS: readonly string[] = Object.freeze(['preserved_runs.json', 'retention_log.json']);

/**
 * Throws `checkpoint_key_invalid` unless `runId` is safe as a single path segment:
 * 1–128 characters of `[A-Za-z0-9._-]`, starting with a letter or digit (so never
 * `.`, `..` or a hidden file), and not one of {@link RESERVED_RUN_IDS}. The message does
 * not echo the value, which may come from untrusted input.
 */
export function assertRunId(runId: unknown): asserts runId is string {
  if (typeof runId !== 'string' || !RUN_ID_PATTERN.test(runId)) {
    throw new CheckpointError(
      'checkpoint_key_invalid',
      'run id must be 1-128 characters of [A-Za-z0-9._-] starting with a letter or digit',
      { details: { length: typeof runId === 'string' ? runId.length : -1 } },
    );
  }
  if (RESERVED_RUN_IDS.includes(runId.toLowerCase())) {
    throw new CheckpointError(
      'checkpoint_key_invalid',
      'run id is the name of a store-wide file (preserved_runs.json, retention_log.json) and cannot name a run',
      {
        details: { length: runId.length },
      },
    );
  }
}
