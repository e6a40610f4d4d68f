import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import type { CheckpointResult, CheckpointWriter, HeartbeatPayload } from '../../writer/types.js';
import {
  LifecycleCommandOutcomeSchema,
  DEFAULT_MAX_COMMAND_OUTCOMES,
  type LifecycleCommandOutcome,
  type SnapshotLifecyclePayload,
} from './schema.js';
import type { LifecycleCheckpointRequest } from './triggers.js';
import { assertFunctionArgument, assertObjectArgument, assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link createCommandOutcomeRecorder}. */
export interface CommandOutcomeRecorderOptions {
  /**
   * Most outcomes kept between two drains; older ones are discarded first (the newest
   * outcomes say most about where the agent is). Use the profile's `maxCommandOutcomes`.
   * @default 20
   */
  readonly limit?: number;
  /**
   * Longest `summary` kept, in characters; longer summaries are cut and end with `…`.
   * @default 500
   */
  readonly maxSummaryLength?: number;
  /** Milliseconds clock used by {@link CommandOutcomeRecorder.track} to measure `duration_ms`. @default Date.now */
  readonly now?: () => number;
}

/** What {@link CommandOutcomeRecorder.track} records about a command. */
export interface CommandTrackOptions<T> {
  /** Summary of a successful result. @default 'ok' */
  readonly summary?: (result: T) => string;
  /** `WARN` instead of `PASS` for a result that succeeded with warnings. */
  readonly warn?: (result: T) => boolean;
  /**
   * Summary of a failure. The default records only the error's name (and reason code
   * for a `CheckpointError`), never its message, which may hold a secret.
   */
  readonly failureSummary?: (error: unknown) => string;
}

/**
 * Collects `command_outcomes` between two snapshots (snapshot-lifecycle.md: "recent
 * command/tool outcomes since the previous snapshot").
 *
 * The agent calls {@link record} (or {@link track}) after each shell command, slash
 * command or tool use; the function that builds the snapshot payload calls
 * {@link drain}, which returns the outcomes since the previous drain (the newest
 * `limit` of them) and starts a new interval. The snapshotLifecycle profile counts
 * `command_outcomes` as material state, so a snapshot carrying drained outcomes is not
 * coalesced away; if a write is refused or fails, {@link restore} puts the outcomes
 * back so the next snapshot carries them.
 */
export interface CommandOutcomeRecorder {
  /** Adds one outcome (validated: `checkpoint_schema_invalid` for a malformed one). */
  record(outcome: LifecycleCommandOutcome): void;
  /** Runs `fn`, measures it and records `PASS` / `WARN`, or `FAIL` when it throws (then rethrows). */
  track<T>(kind: LifecycleCommandOutcome['kind'], name: string, fn: () => T | Promise<T>, options?: CommandTrackOptions<T>): Promise<T>;
  /** The outcomes since the last drain, oldest first, without starting a new interval. */
  pending(): LifecycleCommandOutcome[];
  /** The outcomes since the last drain, oldest first; the recorder starts empty again. */
  drain(): LifecycleCommandOutcome[];
  /** Puts drained outcomes back before the pending ones (the bound still applies). */
  restore(outcomes: readonly LifecycleCommandOutcome[]): void;
  /** Outcomes discarded by the bound since the last drain. */
  readonly discarded: number;
}

/**
 * The outcome as it is kept: its summary cut to `maxSummaryLength` characters, an absent
 * `reason_code` dropped, and validated (`checkpoint_schema_invalid` for a malformed one).
 */
function checkedOutcome(outcome: LifecycleCommandOutcome, maxSummaryLength: number): LifecycleCommandOutcome {
  const cut = (summary: string): string => (summary.length > maxSummaryLength ? `${summary.slice(0, maxSummaryLength - 1)}…` : summary);
  const entry: LifecycleCommandOutcome = {
    ...outcome,
    summary: typeof outcome.summary === 'string' ? cut(outcome.summary) : outcome.summary,
  };
  if (entry.reason_code === undefined) delete entry.reason_code;
  const parsed = LifecycleCommandOutcomeSchema.safeParse(entry);
  if (!parsed.success) {
    const paths = parsed.error.issues.map((i) => `/${i.path.join('/')}`);
    throw new CheckpointError('checkpoint_schema_invalid', `command outcome does not match its schema at ${paths.join(', ')}`, {
      details: { paths },
    });
  }
  return entry;
}

/**
 * Makes a {@link CommandOutcomeRecorder}.
 *
 * @example
 * ```ts
 * const outcomes = createCommandOutcomeRecorder({ limit: snapshotLifecycleOptions.maxCommandOutcomes });
 * await outcomes.track('shell', 'npm test', () => runTests());
 * const payload = { step_state, context_digest, command_outcomes: outcomes.drain() };
 * ```
 */
export function createCommandOutcomeRecorder(options: CommandOutcomeRecorderOptions = {}): CommandOutcomeRecorder {
  assertOptionsArgument(options, 'createCommandOutcomeRecorder');
  const limit = options.limit ?? DEFAULT_MAX_COMMAND_OUTCOMES;
  const maxSummaryLength = options.maxSummaryLength ?? 500;
  const now = options.now ?? (() => Date.now());
  if (!Number.isInteger(limit) || limit < 1)
    throw new CheckpointError('checkpoint_config_invalid', 'command outcome recorder: limit must be a positive integer');
  if (!Number.isInteger(maxSummaryLength) || maxSummaryLength < 1) {
    throw new CheckpointError('checkpoint_config_invalid', 'command outcome recorder: maxSummaryLength must be a positive integer');
  }
  let entries: LifecycleCommandOutcome[] = [];
  let discarded = 0;

  const trim = (): void => {
    if (entries.length > limit) {
      discarded += entries.length - limit;
      entries = entries.slice(entries.length - limit);
    }
  };

  const recorder: CommandOutcomeRecorder = {
    record(outcome) {
      entries.push(checkedOutcome(outcome, maxSummaryLength));
      trim();
    },
    async track(kind, name, fn, trackOptions = {}) {
      const started = now();
      try {
        const result = await fn();
        const duration_ms = Math.max(0, Math.round(now() - started));
        recorder.record({
          kind,
          name,
          result: trackOptions.warn?.(result) ? 'WARN' : 'PASS',
          duration_ms,
          summary: trackOptions.summary ? trackOptions.summary(result) : 'ok',
        });
        return result;
      } catch (err) {
        const duration_ms = Math.max(0, Math.round(now() - started));
        const summary = trackOptions.failureSummary
          ? trackOptions.failureSummary(err)
          : `failed: ${err instanceof Error ? err.name : typeof err}`;
        recorder.record({
          kind,
          name,
          result: 'FAIL',
          duration_ms,
          ...(isCheckpointError(err) ? { reason_code: err.reasonCode } : {}),
          summary,
        });
        throw err;
      }
    },
    pending: () => entries.map((e) => ({ ...e })),
    drain() {
      const out = entries;
      entries = [];
      discarded = 0;
      return out;
    },
    restore(outcomes) {
      entries = [...outcomes.map((e) => ({ ...e })), ...entries];
      trim();
    },
    get discarded() {
      return discarded;
    },
  };
  return recorder;
}

/**
 * Writes a snapshotLifecycle checkpoint whose `command_outcomes` are the recorder's
 * outcomes since the previous snapshot: drains the recorder into the request's payload
 * and, when the writer did not store a new snapshot with them (`coalesced`, or a
 * failure), puts them back so the next snapshot carries them. Nothing recorded is lost.
 *
 * @example
 * ```ts
 * const writer = createWriter({ storage, profile: snapshotLifecycle, runId, heartbeatPayload: heartbeatWithOutcomes(outcomes) });
 * await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.stepEntered(state, { step_id: '2', step_ordinal: 2 }));
 * ```
 */
export async function checkpointWithOutcomes(
  writer: Pick<CheckpointWriter<SnapshotLifecyclePayload>, 'checkpoint'>,
  recorder: CommandOutcomeRecorder,
  request: LifecycleCheckpointRequest,
): Promise<CheckpointResult<SnapshotLifecyclePayload>> {
  assertObjectArgument(writer, 'checkpointWithOutcomes', 'writer');
  assertObjectArgument(recorder, 'checkpointWithOutcomes', 'recorder');
  assertObjectArgument(request, 'checkpointWithOutcomes', 'request');
  assertFunctionArgument(writer.checkpoint, 'checkpointWithOutcomes', 'writer.checkpoint');
  assertFunctionArgument(recorder.drain, 'checkpointWithOutcomes', 'recorder.drain');
  const outcomes = recorder.drain();
  let result: CheckpointResult<SnapshotLifecyclePayload>;
  try {
    result = await writer.checkpoint({
      source: request.source,
      status: request.status,
      payload: { ...request.payload, command_outcomes: outcomes },
    });
  } catch (err) {
    recorder.restore(outcomes); // failMode 'throw'
    throw err;
  }
  if (!result.ok || result.outcome === 'coalesced') recorder.restore(outcomes);
  return result;
}

/**
 * A `heartbeatPayload` for the writer: each 120-second heartbeat snapshot carries the
 * outcomes recorded since the previous snapshot (the recorder is drained). When the beat
 * stores no new snapshot with them — its write still fails after the writer's retries, the
 * beat is refused, or it is coalesced — the writer calls the function's `settled` hook and
 * the outcomes go back into the recorder, so the next snapshot carries them.
 */
export function heartbeatWithOutcomes(recorder: CommandOutcomeRecorder): HeartbeatPayload<SnapshotLifecyclePayload> {
  assertObjectArgument(recorder, 'heartbeatWithOutcomes', 'recorder');
  assertFunctionArgument(recorder.drain, 'heartbeatWithOutcomes', 'recorder.drain');
  const beat = (last: SnapshotLifecyclePayload): SnapshotLifecyclePayload => ({ ...last, command_outcomes: recorder.drain() });
  const settled = (result: CheckpointResult<SnapshotLifecyclePayload>, payload: SnapshotLifecyclePayload): void => {
    if (!result.ok || result.outcome === 'coalesced') recorder.restore(payload.command_outcomes);
  };
  return Object.assign(beat, { settled });
}
