import type { Clock } from '../model/clock.js';
import type { Profile } from '../profiles/define-profile.js';
import type { StorageAdapter } from '../storage/adapter.js';
import type { CliIo, Style } from './io.js';

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
  /** Returns the exit code. */
  run(context: CommandContext): Promise<number>;
}

/** The string value of a flag, or `undefined`. */
export function stringFlag(context: CommandContext, name: string): string | undefined {
  const v = context.values[name];
  return typeof v === 'string' ? v : undefined;
}
