import { parseArgs } from 'node:util';
import { isCheckpointError, type CheckpointError } from '../contract/errors.js';
import { systemClock, type Clock } from '../contract/clock.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { Command, OptionSpec } from './command.js';
import { checkpointCommand } from './commands/checkpoint.js';
import { diffCommand } from './commands/diff.js';
import { lsCommand } from './commands/ls.js';
import { pruneCommand } from './commands/prune.js';
import { resumeCommand } from './commands/resume.js';
import { runsCommand } from './commands/runs.js';
import { showCommand } from './commands/show.js';
import { uiCommand } from './commands/ui.js';
import { verifyCommand } from './commands/verify.js';
import { importCommand } from './commands/import.js';
import { unlockCommand } from './commands/unlock.js';
import { keyCommand } from './commands/key.js';
import { cliKey, lockedEncrypted, openEncrypted, verifyWithoutKey } from './encryption.js';
import { CliError, EXIT, JSON_SCHEMA_VERSION, makeStyle, type CliIo } from './io.js';
import { PROFILE_NAMES, profileByName } from './profiles.js';
import { openStore, storeDir } from './store.js';
import { didYouMean, inCliWords, joinNegativeValues, usageMessage } from './usage.js';

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [
  runsCommand,
  lsCommand,
  showCommand,
  verifyCommand,
  pruneCommand,
  resumeCommand,
  checkpointCommand,
  diffCommand,
  importCommand,
  unlockCommand,
  keyCommand,
  uiCommand,
];

/** Options every command accepts. */
export const GLOBAL_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  dir: {
    type: 'string',
    value: 'PATH',
    description: 'File-system store root, holding checkpoints/<run>/… (default: the current directory)',
  },
  github: {
    type: 'string',
    value: 'OWNER/REPO[@BRANCH][:PATH]',
    description: 'GitHub store; token from GITHUB_TOKEN, API from GITHUB_API_URL',
  },
  postgres: {
    type: 'string',
    value: 'URL',
    description:
      'PostgreSQL store (needs the pg package); or set SAVEPOINT_POSTGRES_URL (keeps the password out of ps). Table from SAVEPOINT_POSTGRES_SCHEMA/_TABLE',
  },
  profile: {
    type: 'string',
    value: 'NAME',
    description: `Profile: ${PROFILE_NAMES.join(', ')}, or a module file exporting one (./my-profile.js) (default "default")`,
  },
  'key-file': {
    type: 'string',
    value: 'PATH',
    description: 'Key of an encrypted store (64 hex digits, base64, or passphrase:TEXT); or set SAVEPOINT_KEY',
  },
  json: { type: 'boolean', description: 'Machine-readable JSON output' },
  quiet: { type: 'boolean', short: 'q', description: 'Results and errors only: no progress, no notes (prune: totals only)' },
  verbose: {
    type: 'boolean',
    short: 'v',
    description: 'Also say on stderr which store and profile were used and how long the command took',
  },
  help: { type: 'boolean', short: 'h', description: 'Show help' },
};

function renderOptions(options: Readonly<Record<string, OptionSpec>>): string {
  const rows = Object.entries(options).map(
    ([name, o]) => [`${o.short ? `-${o.short}, ` : '    '}--${name}${o.value ? ` ${o.value}` : ''}`, o.description] as const,
  );
  const width = Math.max(0, ...rows.map(([l]) => l.length));
  return rows.map(([l, d]) => `  ${l.padEnd(width)}  ${d}`).join('\n');
}

/** The text of `savepoint --help` or `savepoint COMMAND --help`. */
export function helpText(command?: Command): string {
  if (command) {
    return [
      `Usage: savepoint ${command.name} ${command.usage} [options]`,
      '',
      command.summary,
      '',
      ...(Object.keys(command.options).length > 0 ? ['Options:', renderOptions(command.options), ''] : []),
      'Global options:',
      renderOptions(GLOBAL_OPTIONS),
      '',
    ].join('\n');
  }
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: savepoint <command> [options]',
    '',
    'Inspect, verify, prune and resume savepoint checkpoint stores.',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Global options:',
    renderOptions(GLOBAL_OPTIONS),
    '',
    'Exit codes: 0 success, 1 problems found or the operation failed, 2 usage error or not found (docs/cli.md).',
    'Run "savepoint <command> --help" for a command\'s options.',
    '',
  ].join('\n');
}

/** Options of {@link runCli} beyond the I/O, for tests. */
export interface RunCliOptions {
  readonly clock?: Clock;
  /** Use this store instead of opening one from `--dir`/`--github`. */
  readonly storage?: StorageAdapter;
}

/** Which store a command used, for -v: never a token or a password. */
export function storeLabel(
  values: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
  given: StorageAdapter | undefined,
): string {
  if (given) return `store ${given.name}`;
  if (typeof values.github === 'string') return `GitHub store ${values.github}`;
  if (typeof values.dir === 'string') return `file-system store ${values.dir}`;
  const pg = typeof values.postgres === 'string' ? values.postgres : env.SAVEPOINT_POSTGRES_URL;
  if (pg !== undefined) {
    try {
      const url = new URL(pg);
      return `PostgreSQL store ${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
    } catch {
      return 'PostgreSQL store';
    }
  }
  return 'file-system store .';
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit code.
 * Every error a user can cause is reported on stderr as one line with its reason code;
 * nothing is printed that holds a token.
 */
export async function runCli(argv: readonly string[], io: CliIo, options: RunCliOptions = {}): Promise<number> {
  const nameAt = commandIndex(argv);
  const name = nameAt === -1 ? undefined : argv[nameAt];
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    if (name !== undefined) {
      const hint = didYouMean(
        name,
        COMMANDS.map((c) => c.name),
      ).replace(/did you mean (\S+)\?/, 'did you mean "$1"?');
      io.stderr.write(`savepoint: unknown command "${name}"${hint}. Run "savepoint --help" for the commands.\n`);
      return EXIT.usage;
    }
    if (argv.includes('--version') || argv.includes('-v')) {
      io.stdout.write(`${VERSION}\n`);
      return EXIT.ok;
    }
    (argv.includes('--help') || argv.includes('-h') ? io.stdout : io.stderr).write(helpText());
    return argv.includes('--help') || argv.includes('-h') ? EXIT.ok : EXIT.usage;
  }
  const specs = { ...GLOBAL_OPTIONS, ...command.options };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: joinNegativeValues(
        argv.filter((_, i) => i !== nameAt),
        specs,
      ),
      options: Object.fromEntries(
        Object.entries(specs).map(([k, o]) => [
          k,
          { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const message = `${usageMessage(err, specs)}. Run "savepoint ${command.name} --help" for its options.`;
    return reportError(io, command.name, argv.includes('--json'), new CliError(message));
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (values.help) {
    io.stdout.write(helpText(command));
    return EXIT.ok;
  }
  const json = values.json === true;
  // No positional argument is ever ignored: `runs extra` or `show RUN X Y` is a usage error.
  const max = command.maxPositionals ?? Number.POSITIVE_INFINITY;
  if (parsed.positionals.length > max) {
    return reportError(
      io,
      command.name,
      json,
      new CliError(`unexpected argument "${parsed.positionals[max]}" (usage: savepoint ${command.name} ${command.usage})`),
    );
  }
  let storage: StorageAdapter | undefined;
  const started = Date.now();
  // -q: progress bars and notes are drawn only on a terminal, so a quiet run is told stderr is none.
  const commandIo: CliIo =
    values.quiet === true ? { ...io, stderr: { ...io.stderr, write: (t: string) => io.stderr.write(t), isTTY: false } } : io;
  try {
    const profile = await profileByName(typeof values.profile === 'string' ? values.profile : 'default');
    // SAVEPOINT_DIR stands for --dir from here on, so every message and check names the directory used.
    const dir = options.storage ? undefined : storeDir(values, io.env);
    if (dir !== undefined && values.dir === undefined && io.env.SAVEPOINT_DIR === dir) values.dir = dir;
    storage = options.storage ?? (await openEncrypted(await openStore(values, io.env), await cliKey(values, io.env)));
    if (command.name === 'verify' && lockedEncrypted(storage)) return await verifyWithoutKey(storage, profile.name, commandIo, json);
    const code = await command.run({
      io: commandIo,
      style: makeStyle(io),
      storage,
      profile,
      json,
      clock: options.clock ?? systemClock,
      positionals: parsed.positionals,
      values,
    });
    if (values.verbose === true && values.quiet !== true)
      io.stderr.write(
        `savepoint ${command.name}: ${storeLabel(values, io.env, options.storage)}, profile ${profile.name}, ${Date.now() - started} ms, exit ${code}\n`,
      );
    return code;
  } catch (err) {
    if (err instanceof CliError || isCheckpointError(err)) return reportError(io, command.name, json, err);
    throw err;
  } finally {
    if (storage && !options.storage) await storage.close();
  }
}

/**
 * Where the command name is in `argv`: the first word that is neither a flag nor the value
 * of a global flag, so `savepoint --dir ./store runs` finds `runs`, not `./store`.
 */
export function commandIndex(argv: readonly string[]): number {
  const takesValue = new Set(
    Object.entries(GLOBAL_OPTIONS)
      .filter(([, o]) => o.type === 'string')
      .map(([k]) => `--${k}`),
  );
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return i + 1 < argv.length ? i + 1 : -1;
    if (!a.startsWith('-') || a === '-') return i;
    if (takesValue.has(a)) i++;
  }
  return -1;
}

/**
 * Reports a failed command on stderr: one line with the reason, or under `--json` one JSON
 * object (`schemaVersion`, `error.reasonCode`, `error.message`, `error.exitCode`).
 */
function reportError(io: CliIo, command: string, json: boolean, err: CliError | CheckpointError): number {
  const exitCode = err instanceof CliError ? err.exitCode : cliExitCode(err);
  const reasonCode = err instanceof CliError ? err.reasonCode : err.reasonCode;
  const details = err instanceof CliError ? undefined : err.details;
  const message = inCliWords(err.message);
  if (json) {
    const error = {
      command,
      reasonCode,
      message,
      exitCode,
      ...(details && Object.keys(details).length > 0 ? { details } : {}),
    };
    io.stderr.write(`${JSON.stringify({ schemaVersion: JSON_SCHEMA_VERSION, error })}\n`);
  } else {
    io.stderr.write(`savepoint ${command}: ${message}\n`);
    // Each file a resume refused, and why (details.issues of checkpoint_no_valid_snapshot).
    const issues = details?.issues;
    if (Array.isArray(issues)) for (const issue of issues) io.stderr.write(`  ${String(issue)}\n`);
  }
  return exitCode;
}

/** A bad key, run id or option is the user's input (2); a missing run is "not found" (2); the rest an operation that failed (1). */
function cliExitCode(err: CheckpointError): number {
  return err.reasonCode === 'checkpoint_key_invalid' ||
    err.reasonCode === 'checkpoint_config_invalid' ||
    err.reasonCode === 'checkpoint_not_found'
    ? EXIT.usage
    : EXIT.failed;
}

declare const __SAVEPOINT_VERSION__: string | undefined;
const VERSION = typeof __SAVEPOINT_VERSION__ === 'string' ? __SAVEPOINT_VERSION__ : '0.0.0-dev';
