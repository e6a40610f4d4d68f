import type { Clock } from '../../contract/clock.js';
import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import { runCheckpointProtocol, type CheckpointProtocolOptions, type CheckpointReport, type ProgressInput } from './protocol.js';
import { genericContinuationTemplate } from './continuation.js';
import { githubIssueCommentSink } from './sinks/github.js';
import type { TrackerHttpOptions } from './sinks/http.js';
import { linearStatusSink } from './sinks/linear.js';
import type { StatusSink } from './sinks/status-sink.js';
import { assertObjectArgument, assertOptionsArgument } from '../../contract/arguments.js';

/** Environment variables {@link sinkFromEnv} reads. */
export type TrackerEnv = Readonly<Record<string, string | undefined>>;

/**
 * The status sink the environment configures, or `undefined` when none is:
 *
 * - `SAVEPOINT_TRACKER` — `linear`, `github` or `none`; inferred from the variables below when unset.
 * - Linear: `LINEAR_API_KEY`, `LINEAR_ISSUE_ID`, optional `LINEAR_API_URL`.
 * - GitHub: `GITHUB_TOKEN`, `GITHUB_REPOSITORY` (`owner/repo`), `SAVEPOINT_GITHUB_ISSUE`
 *   (the issue number), optional `GITHUB_API_URL`.
 * - `SAVEPOINT_TRACKER_TIMEOUT_MS` — request timeout (default 10000).
 *
 * Throws `checkpoint_config_invalid` naming the missing variable (never its value) when a
 * tracker is chosen but incompletely configured.
 */
export function sinkFromEnv(env: TrackerEnv, http: TrackerHttpOptions = {}): StatusSink | undefined {
  assertObjectArgument(env, 'sinkFromEnv', 'env');
  assertOptionsArgument(http, 'sinkFromEnv');
  const choice = (env.SAVEPOINT_TRACKER ?? '').trim().toLowerCase();
  const timeout = Number(env.SAVEPOINT_TRACKER_TIMEOUT_MS);
  const httpOptions: TrackerHttpOptions = { ...http, ...(Number.isFinite(timeout) && timeout > 0 ? { timeoutMs: timeout } : {}) };
  const tracker =
    choice !== '' ? choice : env.LINEAR_API_KEY ? 'linear' : env.GITHUB_TOKEN && env.SAVEPOINT_GITHUB_ISSUE ? 'github' : 'none';
  const need = (name: string): string => {
    const value = env[name];
    if (!value)
      throw new CheckpointError('checkpoint_config_invalid', `tracker ${tracker}: ${name} is not set`, {
        details: { cause: `${name} not set` },
      });
    return value;
  };
  switch (tracker) {
    case 'none':
      return undefined;
    case 'linear':
      return linearStatusSink({
        ...httpOptions,
        apiKey: need('LINEAR_API_KEY'),
        issueId: need('LINEAR_ISSUE_ID'),
        ...(env.LINEAR_API_URL ? { endpoint: env.LINEAR_API_URL } : {}),
      });
    case 'github': {
      const [owner = '', repo = ''] = need('GITHUB_REPOSITORY').split('/');
      return githubIssueCommentSink({
        ...httpOptions,
        owner,
        repo,
        issueNumber: Number(need('SAVEPOINT_GITHUB_ISSUE')),
        token: need('GITHUB_TOKEN'),
        ...(env.GITHUB_API_URL ? { baseUrl: env.GITHUB_API_URL } : {}),
      });
    }
    default:
      throw new CheckpointError('checkpoint_config_invalid', 'SAVEPOINT_TRACKER must be linear, github or none', {
        details: { cause: 'unknown SAVEPOINT_TRACKER' },
      });
  }
}

/** A sink that fails every call with `error`, so a misconfigured tracker shows up as a failed Step 3 instead of crashing the hook. */
function failingSink(name: string, error: CheckpointError): StatusSink {
  return { name, createComment: () => Promise.reject(error), updateComment: () => Promise.reject(error) };
}

/** Options of {@link runStopHook}. */
export interface StopHookOptions extends Pick<
  CheckpointProtocolOptions,
  'commitMessage' | 'progressFile' | 'stateFile' | 'status' | 'nextAction' | 'runId'
> {
  /** Project directory. @default process.cwd() */
  readonly cwd?: string;
  /** Environment the tracker is configured from. @default process.env */
  readonly env?: TrackerEnv;
  /** Tracker sink; `null` for none. @default sinkFromEnv(env) */
  readonly sink?: StatusSink | null;
  /** State to merge into `.ccc-progress.md`. @default {} (refresh the existing file) */
  readonly progress?: ProgressInput;
  /** `fetch` for the sink built from the environment. @default globalThis.fetch */
  readonly fetch?: typeof globalThis.fetch;
  /** Clock. @default systemClock */
  readonly clock?: Clock;
  /** Where the output goes. @default process.stdout.write */
  readonly write?: (text: string) => void;
  /**
   * Inject the continuation prompt through the Claude Code stop-hook contract: print
   * `{"decision": "block", "reason": <prompt>, "systemMessage": <report>}` on stdout, so the
   * agent continues with the prompt (progress-protocol.md: "the stop hook injects a
   * continuation prompt via the `reason` field"). `false`: print the report as text.
   * @default true
   */
  readonly inject?: boolean;
  /**
   * What Claude Code passed the hook on stdin (parsed), when the caller read it. With
   * `stop_hook_active: true` (the agent is already continuing because of a stop hook) the hook
   * does not block again, so a session cannot loop. The hook never reads stdin itself.
   * @default undefined
   */
  readonly hookInput?: { readonly stop_hook_active?: boolean };
}

/** The Claude Code stop-hook output that blocks the stop and hands the agent `reason` as its next instruction. */
export interface StopHookDecision {
  readonly decision: 'block';
  readonly reason: string;
  /** The completion report, shown to the user. */
  readonly systemMessage: string;
}

/** The prompt to inject: the one Step 4 would print, else the progress file's, else the spec's template. */
function promptOf(report: CheckpointReport): string {
  const prompt = report.continuationPrompt ?? report.progress?.continuationPrompt;
  return prompt !== undefined && prompt.trim() !== '' ? prompt.trim() : genericContinuationTemplate(report.progress?.issue.id);
}

/**
 * The stop-hook entry: runs the automated profile (Steps 1 and 3) non-interactively — no
 * prompt, no stdin read — and injects the continuation prompt through the Claude Code
 * stop-hook contract: one JSON line on stdout, `{"decision": "block", "reason": <prompt>,
 * "systemMessage": <everything the protocol printed, ending with the completion report>}`
 * (see {@link StopHookOptions.inject}, {@link StopHookOptions.hookInput}). Resolves the process
 * exit code: `0` when at least one step succeeded (partial success included, as the spec asks
 * never to hide it), `1` only when every step failed (then the report is printed as text and
 * nothing is injected).
 *
 * @example
 * ```ts
 * // .claude/hooks/savepoint-stop.ts
 * import { runStopHook } from 'savepoint/progress-protocol';
 * process.exitCode = await runStopHook();
 * ```
 */
export async function runStopHook(options: StopHookOptions = {}): Promise<number> {
  assertOptionsArgument(options, 'runStopHook');
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  const env = options.env ?? process.env;
  let sink: StatusSink | undefined;
  if (options.sink !== undefined) sink = options.sink ?? undefined;
  else {
    try {
      sink = sinkFromEnv(env, { ...(options.fetch ? { fetch: options.fetch } : {}), ...(options.clock ? { clock: options.clock } : {}) });
    } catch (err) {
      const name =
        (env.SAVEPOINT_TRACKER ?? '').toLowerCase() === 'github' || (!env.LINEAR_API_KEY && env.GITHUB_TOKEN) ? 'GitHub' : 'Linear';
      sink = failingSink(
        name,
        isCheckpointError(err)
          ? err
          : new CheckpointError('checkpoint_config_invalid', 'tracker configuration invalid', {
              details: { cause: 'tracker configuration invalid' },
            }),
      );
    }
  }
  try {
    const report = await runCheckpointProtocol({
      cwd: options.cwd ?? process.cwd(),
      profile: 'automated',
      progress: options.progress ?? {},
      ...(sink ? { sink } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.commitMessage !== undefined ? { commitMessage: options.commitMessage } : {}),
      ...(options.progressFile !== undefined ? { progressFile: options.progressFile } : {}),
      ...(options.stateFile !== undefined ? { stateFile: options.stateFile } : {}),
      ...(options.status !== undefined ? { status: options.status } : {}),
      ...(options.nextAction !== undefined ? { nextAction: options.nextAction } : {}),
      ...(options.runId !== undefined ? { runId: options.runId } : {}),
    });
    if (report.succeeded === 0) {
      write(`${report.output}\n`);
      return 1;
    }
    if (options.inject === false || options.hookInput?.stop_hook_active === true) write(`${report.output}\n`);
    else {
      const decision: StopHookDecision = { decision: 'block', reason: promptOf(report), systemMessage: report.output };
      write(`${JSON.stringify(decision)}\n`);
    }
    return 0;
  } catch (err) {
    write(`Checkpoint failed: ${isCheckpointError(err) ? err.reasonCode : 'unexpected error'}\n`);
    return 1;
  }
}
