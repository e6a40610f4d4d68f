import { resolve } from 'node:path';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { systemClock, toRfc3339, type Clock } from '../../model/clock.js';
import { CheckpointError, isCheckpointError } from '../../model/errors.js';
import { newSnapshotId, RUN_ID_PATTERN } from '../../model/ids.js';
import { parseProgress, readContinuationPrompt } from './codec.js';
import { keepProgressForeignFields } from './foreign.js';
import { continuationPromptFor, genericContinuationTemplate, renderContinuationBox } from './continuation.js';
import { readStateFile, readTextIfExists, updateStateFile, writeFileAtomic, type CccState } from './files.js';
import { gitSnapshot } from './git.js';
import { ProgressDocumentSchema, ProgressMetaSchema, type ProgressDocument } from './model.js';
import { PROGRESS_STATUSES, progressProtocol, type ProgressStatus } from './profile.js';
import type { StatusSink } from './sinks/status-sink.js';
import { renderStatusComment, statusCommentFor, taskPosition } from './status-comment.js';
import { assertArrayArgument, assertOptionsArgument } from '../../model/arguments.js';

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

/** The default commit message: `checkpoint(CIA-123): task 3 of 7 — Implement scoring`. */
export const DEFAULT_COMMIT_MESSAGE = 'checkpoint({issue}): task {n} of {m} — {task}';

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

const CONSEQUENCE = {
  1: 'session state not saved to .ccc-progress.md.',
  2: 'work not committed.',
  3: 'status not persisted to issue tracker.',
  4: 'generic template printed instead.',
} as const;

function causeOf(err: unknown): string {
  if (isCheckpointError(err)) {
    const cause = err.details.cause;
    if (typeof cause === 'string' && cause !== '') return cause;
    return err.reasonCode;
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'unexpected error';
}

function runIdFor(issueId: string): string {
  const cleaned = issueId.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 128);
  return RUN_ID_PATTERN.test(cleaned) ? cleaned : 'session';
}

function commitMessageFor(template: CheckpointProtocolOptions['commitMessage'], doc: ProgressDocument, timestamp: string): string {
  const { n, m, description } = taskPosition(doc);
  const context: CommitMessageContext = { issue: doc.issue.id, title: doc.issue.title, task: description.replace(/\s*\n\s*/g, ' '), n, m, mode: doc.executionMode, timestamp };
  if (typeof template === 'function') return template(context);
  return (template ?? DEFAULT_COMMIT_MESSAGE).replace(/\{(issue|title|task|n|m|mode|timestamp)\}/g, (_, key: keyof CommitMessageContext) => String(context[key]));
}

/** Formats the completion report exactly as progress-protocol.md shows it. */
export function formatCompletionReport(steps: readonly ProtocolStepResult[]): string {
  assertArrayArgument(steps, 'formatCompletionReport', 'steps');
  const counted = steps.filter((s) => s.outcome !== 'not_run');
  const ok = counted.filter((s) => s.outcome !== 'failed').length;
  const lines = [`Checkpoint complete: ${ok}/${counted.length} steps succeeded.`];
  for (const s of counted) if (s.outcome === 'failed') lines.push(`Failed: ${s.name} (${s.cause ?? 'error'}) — ${s.consequence ?? ''}`.trimEnd());
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
  if (typeof options.cwd !== 'string' || options.cwd === '') throw new CheckpointError('checkpoint_config_invalid', 'runCheckpointProtocol needs cwd');
  const profile = options.profile ?? 'manual';
  const manual = profile === 'manual';
  const clock = options.clock ?? systemClock;
  const nowMs = clock.now();
  const now = toRfc3339(nowMs);
  const progressName = options.progressFile ?? '.ccc-progress.md';
  const progressPath = resolve(options.cwd, progressName);
  const statePath = resolve(options.cwd, options.stateFile ?? '.ccc-state.json');
  const output: string[] = [];
  const say = (text: string): void => {
    output.push(text);
    options.log?.(text);
  };
  const steps: ProtocolStepResult[] = [];
  const record = (result: ProtocolStepResult): void => {
    steps.push(result);
    if (result.message) say(result.message);
  };
  const fail = (step: 1 | 2 | 3 | 4, name: string, err: unknown, warning: string): ProtocolStepResult => {
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
  };

  let state: CccState = {};
  let stateError: unknown;
  try {
    state = await readStateFile(statePath);
  } catch (err) {
    stateError = err;
  }
  const activeTaskFiles = options.inScopeFiles ?? (Array.isArray(state.activeTaskFiles) ? state.activeTaskFiles.filter((f): f is string => typeof f === 'string') : undefined);

  // Step 1: persist progress.
  let previous: ProgressDocument | undefined;
  let progress: ProgressDocument | undefined;
  try {
    let previousMeta: { run_id?: string; sequence?: number } | undefined;
    let text: string | undefined;
    try {
      text = await readTextIfExists(progressPath);
    } catch (err) {
      say(`Warning: the existing ${progressName} could not be read (${causeOf(err)}); it is rewritten from this checkpoint's state.`);
    }
    if (text !== undefined) {
      try {
        const parsed = parseProgress(text, progressName);
        previous = parsed.document;
        const meta = ProgressMetaSchema.partial().safeParse(parsed.meta);
        if (meta.success) previousMeta = meta.data;
      } catch (err) {
        say(`Warning: the existing ${progressName} could not be read (${causeOf(err)}); it is rewritten from this checkpoint's state.`);
      }
    }
    const input = Object.fromEntries(Object.entries(options.progress ?? {}).filter(([, v]) => v !== undefined)) as ProgressInput;
    if (!input.issue && !previous) throw new CheckpointError('checkpoint_schema_invalid', 'no issue given', { details: { cause: `no issue given and no readable ${progressName}` } });
    const merged = {
      ...(previous ?? { completedTasks: [], remainingTasks: [], decisions: [], blockers: [], executionMode: '', continuationPrompt: '' }),
      ...input,
      session: input.session || now,
    } as ProgressDocument;
    const tasksChanged = input.currentTask !== undefined || input.remainingTasks !== undefined || input.completedTasks !== undefined || options.nextAction !== undefined;
    if (input.continuationPrompt === undefined && (tasksChanged || !merged.continuationPrompt)) {
      merged.continuationPrompt = continuationPromptFor(merged, { ...(activeTaskFiles ? { keyFiles: activeTaskFiles } : {}), ...(options.nextAction ? { nextAction: options.nextAction } : {}) });
    }
    const checked = ProgressDocumentSchema.safeParse(merged);
    if (!checked.success) {
      const path = `/${checked.error.issues[0]!.path.join('/')}`;
      throw new CheckpointError('checkpoint_schema_invalid', `progress does not match its schema at ${path}`, { details: { cause: `invalid progress at ${path}` } });
    }
    progress = checked.data;
    const source = options.source ?? (manual ? 'handoff_request' : 'gate_boundary');
    progressProtocol.trigger(source);
    const status = options.status ?? (progress.blockers.length > 0 ? 'blocked' : 'in_progress');
    if (!(PROGRESS_STATUSES as readonly string[]).includes(status)) throw new CheckpointError('checkpoint_schema_invalid', `unknown status ${status}`, { details: { cause: `unknown status ${status}` } });
    const encoded = await progressProtocol.document.encode({
      id: newSnapshotId(nowMs),
      runId: options.runId ?? previousMeta?.run_id ?? runIdFor(progress.issue.id),
      sequence: (previousMeta?.sequence ?? 0) + 1,
      createdAt: now,
      source,
      sourceDetails: [],
      status,
      payload: progress,
    });
    progress = encoded.snapshot.payload;
    // Lines the previous file's writer added (a **Branch:** line, a note) stay, as in any savepoint rewrite.
    const bytes = text === undefined ? encoded.bytes : await keepProgressForeignFields(utf8Encode(text), encoded.bytes);
    await writeFileAtomic(progressPath, utf8Decode(bytes));
    record({ step: 1, name: 'Persist progress', outcome: 'succeeded', message: `Progress saved to ${progressName}.` });
  } catch (err) {
    record(fail(1, 'Persist progress', err, `progress not persisted to ${progressName}`));
  }

  // Step 2: git snapshot (manual only).
  if (!manual) {
    steps.push({ step: 2, name: 'Git snapshot', outcome: 'not_run' });
  } else if (stateError !== undefined && options.inScopeFiles === undefined) {
    record({ step: 2, name: 'Git snapshot', outcome: 'skipped', message: `Git snapshot skipped — .ccc-state.json could not be read (${causeOf(stateError)}), so no file is known to be in scope.` });
  } else {
    try {
      const message = commitMessageFor(options.commitMessage, progress ?? previous ?? emptyProgress(), now);
      const result = await gitSnapshot({ cwd: options.cwd, inScopeFiles: activeTaskFiles, message, ...(options.git ?? {}) });
      record({ step: 2, name: 'Git snapshot', outcome: result.outcome === 'committed' ? 'succeeded' : 'skipped', message: result.message });
    } catch (err) {
      record(fail(2, 'Git snapshot', err, 'git snapshot failed'));
    }
  }

  // Step 3: tracker status upsert (both profiles).
  let commentId: string | undefined;
  const sink = options.sink;
  if (!sink) {
    record({ step: 3, name: 'Tracker update', outcome: 'skipped', message: 'Tracker update skipped — no tracker configured.' });
  } else {
    const name = `${sink.name} update`;
    try {
      if (stateError !== undefined) throw stateError;
      const doc = progress ?? previous;
      if (!doc) throw new CheckpointError('checkpoint_schema_invalid', 'no progress state', { details: { cause: 'no progress state to report' } });
      const status = options.status ?? (doc.blockers.length > 0 ? 'blocked' : 'in_progress');
      const body = renderStatusComment(statusCommentFor(doc, { ...(previous ? { previous } : {}), status, ...(options.nextAction ? { nextAction: options.nextAction } : {}), updated: now }));
      const stored = state.checkpointCommentId;
      const existing = typeof stored === 'number' || (typeof stored === 'string' && stored !== '') ? String(stored) : undefined;
      let created: string | undefined;
      if (existing !== undefined && (await sink.updateComment(existing, body))) {
        commentId = existing;
        record({ step: 3, name, outcome: 'succeeded', message: `${sink.name} status comment updated.` });
      } else {
        created = await sink.createComment(body);
        commentId = created;
        try {
          await updateStateFile(statePath, { checkpointCommentId: created });
        } catch (err) {
          record({
            step: 3,
            name,
            outcome: 'failed',
            cause: 'checkpointCommentId not stored in .ccc-state.json',
            consequence: 'the comment was created, but the next checkpoint will create another.',
            message: `Warning: ${sink.name} status comment created, but its id could not be stored in .ccc-state.json (${causeOf(err)}).`,
            ...(isCheckpointError(err) ? { error: err } : {}),
          });
          created = undefined;
        }
        if (created) record({ step: 3, name, outcome: 'succeeded', message: `${sink.name} status comment created.` });
      }
    } catch (err) {
      record(fail(3, name, err, `${name} skipped`));
    }
  }

  // Step 4: continuation prompt (manual only).
  let continuationPrompt: string | undefined;
  if (!manual) {
    steps.push({ step: 4, name: 'Continuation prompt', outcome: 'not_run' });
  } else {
    let cause: string;
    try {
      const text = await readTextIfExists(progressPath);
      continuationPrompt = text === undefined ? undefined : readContinuationPrompt(text);
      cause = text === undefined ? `${progressName} not found` : 'no Continuation Prompt section';
    } catch (err) {
      cause = `${progressName} unreadable: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
    }
    if (continuationPrompt !== undefined) {
      record({ step: 4, name: 'Continuation prompt', outcome: 'succeeded', message: renderContinuationBox(continuationPrompt) });
    } else {
      const template = genericContinuationTemplate(progress?.issue.id ?? previous?.issue.id ?? options.progress?.issue?.id);
      continuationPrompt = template;
      record({
        step: 4,
        name: 'Continuation prompt',
        outcome: 'failed',
        cause,
        consequence: CONSEQUENCE[4],
        message: `Warning: could not read the continuation prompt from ${progressName} (${cause}); here is a generic template to fill in.\n${renderContinuationBox(template)}`,
      });
    }
  }

  const summary = formatCompletionReport(steps);
  say(summary);
  const counted = steps.filter((s) => s.outcome !== 'not_run');
  return {
    profile,
    steps,
    succeeded: counted.filter((s) => s.outcome !== 'failed').length,
    total: counted.length,
    summary,
    output: output.join('\n'),
    ...(progress ? { progress } : {}),
    ...(continuationPrompt !== undefined ? { continuationPrompt } : {}),
    ...(commentId !== undefined ? { commentId } : {}),
  };
}

function emptyProgress(): ProgressDocument {
  return { issue: { id: 'unknown', title: '' }, session: '', executionMode: '', completedTasks: [], remainingTasks: [], decisions: [], blockers: [], continuationPrompt: '-' };
}
