import type { Clock } from '../../contract/clock.js';
import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import { runCheckpointProtocol, type CheckpointProtocolOptions, type ProgressInput } from './protocol.js';
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
  /** Where the report goes. @default process.stdout.write */
  readonly write?: (text: string) => void;
}

/**
 * The stop-hook entry: runs the automated profile (Steps 1 and 3) non-interactively — no
 * prompt, no stdin read — and writes everything it prints, ending with the completion
 * report, to stdout. Resolves the process exit code: `0` when at least one step
 * succeeded (partial success included, as the spec asks never to hide it), `1` only when
 * every step failed.
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
    write(`${report.output}\n`);
    return report.succeeded > 0 ? 0 : 1;
  } catch (err) {
    write(`Checkpoint failed: ${isCheckpointError(err) ? err.reasonCode : 'unexpected error'}\n`);
    return 1;
  }
}
