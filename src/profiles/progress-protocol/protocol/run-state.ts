import { isCheckpointError } from '../../../contract/errors.js';
import type { CccState } from '../files.js';
import type { ProgressDocument } from '../model.js';
import type { CheckpointProtocolOptions, ProtocolStepResult } from '../protocol.js';

/** One run of the checkpoint protocol: its settings, what it printed, and what each step left for the next. */
export interface ProtocolRun {
  readonly options: CheckpointProtocolOptions;
  /** The manual profile (all four steps), not the automated one (steps 1 and 3). */
  readonly manual: boolean;
  readonly nowMs: number;
  /** `nowMs`, RFC 3339. */
  readonly now: string;
  /** The progress file as named in messages, and its path. */
  readonly progressName: string;
  readonly progressPath: string;
  readonly statePath: string;
  readonly output: string[];
  readonly steps: ProtocolStepResult[];
  /** `.ccc-state.json` (empty when it could not be read: `stateError` says why). */
  readonly state: CccState;
  readonly stateError: unknown;
  /** The files in scope for the git snapshot and the continuation prompt. */
  readonly activeTaskFiles: readonly string[] | undefined;
  /** The progress document the file held before this run, when it could be read. */
  previous?: ProgressDocument;
  /** The progress document Step 1 built (kept when writing it failed). */
  progress?: ProgressDocument;
  commentId?: string;
  continuationPrompt?: string;
}

/** Prints `text`: into the report's output and to `options.log`. */
export function say(run: ProtocolRun, text: string): void {
  run.output.push(text);
  run.options.log?.(text);
}

/** Records a step's result and prints its message. */
export function record(run: ProtocolRun, result: ProtocolStepResult): void {
  run.steps.push(result);
  if (result.message) say(run, result.message);
}

/** What does not happen when a step fails, as the completion report says it. */
export const CONSEQUENCE = {
  1: 'session state not saved to .ccc-progress.md.',
  2: 'work not committed.',
  3: 'status not persisted to issue tracker.',
  4: 'generic template printed instead.',
} as const;

/** A short cause for a failure (`HTTP 503`, `ENOENT`); never a token or a response body. */
export function causeOf(err: unknown): string {
  if (isCheckpointError(err)) {
    const cause = err.details.cause;
    if (typeof cause === 'string' && cause !== '') return cause;
    return err.reasonCode;
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'unexpected error';
}

/** A failed step's result, with its warning. */
export function failedStep(step: 1 | 2 | 3 | 4, name: string, err: unknown, warning: string): ProtocolStepResult {
  const cause = causeOf(err);
  return {
    step,
    name,
    outcome: 'failed',
    cause,
    consequence: CONSEQUENCE[step],
    message: `Warning: ${warning} (${cause}).`,
    ...(isCheckpointError(err) ? { error: err } : {}),
  };
}
