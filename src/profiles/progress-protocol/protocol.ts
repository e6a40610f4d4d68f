import { resolve } from 'node:path';
import { systemClock, toRfc3339, type Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import { readStateFile, type CccState } from './files.js';
import type { ProgressDocument } from './model.js';
import type { ProgressStatus } from './profile.js';
import type { StatusSink } from './sinks/status-sink.js';
import { assertArrayArgument, assertOptionsArgument } from '../../contract/arguments.js';
import { continuationStep } from './protocol/continuation-step.js';
import { gitStep } from './protocol/git-step.js';
import { persistProgress } from './protocol/persist-progress.js';
import { say, type ProtocolRun } from './protocol/run-state.js';
import { trackerStep } from './protocol/tracker-step.js';

/** progress-protocol.md's invocation profiles: manual runs all four steps, automated (the stop hook) steps 1 and 3. */
export type ProtocolProfile = 'manual' | 'automated';

/**
 * How a step ended. `skipped` is a step that had nothing to do (a clean tree) and counts
 * as succeeded; `not_run` is a step outside the invocation profile and is not counted.
 */
export type StepOutcome = 'succeeded' | 'skipped' | 'failed' | 'not_run';

/** One step's result. */
export interface ProtocolStepResult {
  readonly step: 1 | 2 | 3 | 4;
  /** As the completion report names it: `Persist progress`, `Git snapshot`, `Linear update`, `Continuation prompt`. */
  readonly name: string;
  readonly outcome: StepOutcome;
  /** What the step printed (a skip message, a warning, the continuation box). */
  readonly message?: string;
  /** Failed steps: a short cause (`HTTP 503`); never a token or a response body. */
  readonly cause?: string;
  /** Failed steps: what did not happen, for the human to act on. */
  readonly consequence?: string;
  /** Failed steps: the underlying error. */
  readonly error?: CheckpointError;
}

/** What {@link runCheckpointProtocol} reports. */
export interface CheckpointReport {
  readonly profile: ProtocolProfile;
  /** All four steps, in order (`not_run` for steps outside the profile). */
  readonly steps: readonly ProtocolStepResult[];
  /** Steps of the profile that did not fail (skipped ones included). */
  readonly succeeded: number;
  /** Steps of the profile: 4 (manual) or 2 (automated). */
  readonly total: number;
  /** The completion report: `Checkpoint complete: 3/4 steps succeeded.` and one `Failed: …` line per failed step. */
  readonly summary: string;
  /** Everything the protocol printed, in order, ending with {@link CheckpointReport.summary}. */
  readonly output: string;
  /** The progress document Step 1 built (also when writing it failed). */
  readonly progress?: ProgressDocument;
  /** The prompt Step 4 printed. */
  readonly continuationPrompt?: string;
  /** The status comment's id after Step 3. */
  readonly commentId?: string;
}

/** Fields of `.ccc-progress.md` to set; the rest is kept from the existing file. */
export type ProgressInput = { readonly [K in keyof ProgressDocument]?: ProgressDocument[K] };

/** What a commit message template can use. */
export interface CommitMessageContext {
  readonly issue: string;
  readonly title: string;
  readonly task: string;
  readonly n: number;
  readonly m: number;
  readonly mode: string;
  readonly timestamp: string;
}

export { DEFAULT_COMMIT_MESSAGE } from './protocol/git-step.js';

/** Options of {@link runCheckpointProtocol}. */
export interface CheckpointProtocolOptions {
  /** The project directory: where `.ccc-progress.md` and `.ccc-state.json` live, inside the git work tree. */
  readonly cwd: string;
  /** Which steps run. @default 'manual' */
  readonly profile?: ProtocolProfile;
  /**
   * The session state to persist, merged over the existing `.ccc-progress.md` (`session`
   * defaults to now). Without `continuationPrompt`, the prompt is regenerated in the spec's
   * shape whenever tasks changed, kept otherwise.
   * @default {} (refresh the existing file)
   */
  readonly progress?: ProgressInput;
  /** The status of this checkpoint. @default 'blocked' when there are blockers, else 'in_progress' */
  readonly status?: ProgressStatus;
  /** The specific next action, for the continuation prompt and the status comment. @default continuing the current task */
  readonly nextAction?: string;
  /** Where the "Checkpoint Status" comment goes; without one, Step 3 is skipped. @default none */
  readonly sink?: StatusSink;
  /**
   * Commit message: a template with `{issue}`, `{title}`, `{task}`, `{n}`, `{m}`, `{mode}`,
   * `{timestamp}`, or a function.
   * @default DEFAULT_COMMIT_MESSAGE
   */
  readonly commitMessage?: string | ((context: CommitMessageContext) => string);
  /** In-scope files for Step 2, instead of `.ccc-state.json` `activeTaskFiles`. @default activeTaskFiles */
  readonly inScopeFiles?: readonly string[];
  /** Git executable and per-call timeout. @default { gitBinary: 'git', timeoutMs: 30000 } */
  readonly git?: { readonly gitBinary?: string; readonly timeoutMs?: number };
  /** Time source for the session timestamp and the comment. @default systemClock */
  readonly clock?: Pick<Clock, 'now'>;
  /** Progress file, relative to `cwd`. @default '.ccc-progress.md' */
  readonly progressFile?: string;
  /** State file, relative to `cwd`. @default '.ccc-state.json' */
  readonly stateFile?: string;
  /** Run id in savepoint's metadata comment. @default the previous one, else the issue id */
  readonly runId?: string;
  /** Trigger recorded in the metadata. @default 'handoff_request' (manual) / 'gate_boundary' (automated) */
  readonly source?: string;
  /** Receives each piece of output as soon as it is produced (e.g. `(t) => process.stdout.write(t + '\n')`). @default none */
  readonly log?: (text: string) => void;
}

/** Formats the completion report exactly as progress-protocol.md shows it. */
export function formatCompletionReport(steps: readonly ProtocolStepResult[]): string {
  assertArrayArgument(steps, 'formatCompletionReport', 'steps');
  const counted = steps.filter((s) => s.outcome !== 'not_run');
  const ok = counted.filter((s) => s.outcome !== 'failed').length;
  const lines = [`Checkpoint complete: ${ok}/${counted.length} steps succeeded.`];
  for (const s of counted)
    if (s.outcome === 'failed') lines.push(`Failed: ${s.name} (${s.cause ?? 'error'}) — ${s.consequence ?? ''}`.trimEnd());
  return lines.join('\n');
}

/**
 * Runs progress-protocol.md's four-step checkpoint protocol. Each step runs whatever
 * happened before it (fail-forward), skips with a message when it has nothing to do, and
 * never throws: the report says which steps failed and why, and never hides a partial
 * success.
 *
 * 1. **Persist progress** (both profiles): `.ccc-progress.md` created or updated in place,
 *    sealed with savepoint's metadata so the `progressProtocol` profile can read it.
 * 2. **Git snapshot** (manual): see {@link gitSnapshot} — only in-scope tracked files.
 * 3. **Tracker update** (both): the single "Checkpoint Status" comment upserted through
 *    `sink`; its id kept in `.ccc-state.json` as `checkpointCommentId`.
 * 4. **Continuation prompt** (manual): the `## Continuation Prompt` of the file, in the
 *    spec's box, or the generic template with a warning when it cannot be read.
 *
 * @example
 * ```ts
 * const report = await runCheckpointProtocol({
 *   cwd: process.cwd(),
 *   progress: { issue: { id: 'CIA-123', title: 'Scoring' }, currentTask: { description: 'Combo multiplier', status: 'tests failing' } },
 *   sink: linearStatusSink({ issueId: 'CIA-123', apiKey: process.env.LINEAR_API_KEY! }),
 * });
 * console.log(report.output); // … Checkpoint complete: 4/4 steps succeeded.
 * ```
 */
export async function runCheckpointProtocol(options: CheckpointProtocolOptions): Promise<CheckpointReport> {
  assertOptionsArgument(options, 'runCheckpointProtocol');
  if (typeof options.cwd !== 'string' || options.cwd === '')
    throw new CheckpointError('checkpoint_config_invalid', 'runCheckpointProtocol needs cwd');
  const profile = options.profile ?? 'manual';
  const run = await startRun(options, profile === 'manual');
  await persistProgress(run);
  await gitStep(run);
  await trackerStep(run);
  await continuationStep(run);

  const { steps, progress, continuationPrompt, commentId } = run;
  const summary = formatCompletionReport(steps);
  say(run, summary);
  const counted = steps.filter((s) => s.outcome !== 'not_run');
  return {
    profile,
    steps,
    succeeded: counted.filter((s) => s.outcome !== 'failed').length,
    total: counted.length,
    summary,
    output: run.output.join('\n'),
    ...(progress ? { progress } : {}),
    ...(continuationPrompt !== undefined ? { continuationPrompt } : {}),
    ...(commentId !== undefined ? { commentId } : {}),
  };
}

/** The run's settings, and `.ccc-state.json` read once (a failure to read it is kept for the steps that need it). */
async function startRun(options: CheckpointProtocolOptions, manual: boolean): Promise<ProtocolRun> {
  const clock = options.clock ?? systemClock;
  const nowMs = clock.now();
  const progressName = options.progressFile ?? '.ccc-progress.md';
  const statePath = resolve(options.cwd, options.stateFile ?? '.ccc-state.json');
  let state: CccState = {};
  let stateError: unknown;
  try {
    state = await readStateFile(statePath);
  } catch (err) {
    stateError = err;
  }
  return {
    options,
    manual,
    nowMs,
    now: toRfc3339(nowMs),
    progressName,
    progressPath: resolve(options.cwd, progressName),
    statePath,
    output: [],
    steps: [],
    state,
    stateError,
    activeTaskFiles:
      options.inScopeFiles ??
      (Array.isArray(state.activeTaskFiles) ? state.activeTaskFiles.filter((f): f is string => typeof f === 'string') : undefined),
  };
}
