import type { Clock } from '../contract/clock.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';
import { collectRunFiles, type RunFiles } from '../snapshot-io/run-files.js';
import { CliError, notFound, type CliIo, type Style } from './io.js';
import { profileHint } from './probe.js';

/** An option of a command, in `node:util` parseArgs form plus help text. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  readonly description: string;
  /** Placeholder shown in help, e.g. `N`. */
  readonly value?: string;
}

/** What every command receives. */
export interface CommandContext {
  readonly io: CliIo;
  readonly style: Style;
  readonly storage: StorageAdapter;
  readonly profile: Profile<unknown>;
  /** Print JSON instead of tables. */
  readonly json: boolean;
  readonly clock: Clock;
  readonly positionals: readonly string[];
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
}

/** One `savepoint <command>`. */
export interface Command {
  readonly name: string;
  /** `RUN [--seq N | --id ID]` */
  readonly usage: string;
  readonly summary: string;
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** How many positional arguments it takes; more is a usage error. @default unlimited (the command checks) */
  readonly maxPositionals?: number;
  /** Returns the exit code. */
  run(context: CommandContext): Promise<number>;
}

/**
 * The command's RUN argument, checked against the profile's run-id rule, so a bad id is
 * refused before any key is built from it.
 */
export function runArgument(context: CommandContext, command: string): string {
  const runId = context.positionals[0];
  if (!runId) throw new CliError(`${command} needs a RUN`);
  context.profile.assertRunId(runId);
  return runId;
}

/** The string value of a flag, or `undefined`. */
export function stringFlag(context: CommandContext, name: string): string | undefined {
  const v = context.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** The files of run `runId` in the command's store; exit 2 naming the run when it has none. */
export async function runFilesOf(context: CommandContext, runId: string): Promise<RunFiles> {
  const run = (await collectRunFiles(context.storage, context.profile, runId)).runs.get(runId);
  if (!run)
    throw notFound(`run "${runId}" not found (profile ${context.profile.name}).${await profileHint(context.storage, context.profile)}`);
  return run;
}
