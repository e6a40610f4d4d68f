import type { ReasonCode } from '../contract/reason-codes.js';
/** Where the CLI reads and writes; injectable so commands run in-process in tests too. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
  /** Reads all of standard input (for `--payload -`). */
  readStdin(): Promise<string>;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Exit codes, documented in the README's CLI section. */
export const EXIT = {
  /** Success. */
  ok: 0,
  /** The command ran and found problems (verify), or its operation failed (a write, a resume with no valid snapshot). */
  failed: 1,
  /** Bad usage: unknown command or flag, missing argument, invalid value. */
  usage: 2,
  /** The run is held by a live writer (`unlock` without `--force`). */
  locked: 3,
} as const;

/** An error that carries its exit code and a message meant for the user. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.usage,
    /** The reason code of its `--json` error report. */
    readonly reasonCode: ReasonCode = exitCode === EXIT.usage ? 'checkpoint_config_invalid' : 'checkpoint_storage_unavailable',
  ) {
    super(message);
  }
}

/** A run, store or snapshot that does not exist: exit 2 with `checkpoint_not_found`. */
export const notFound = (message: string): CliError => new CliError(message, EXIT.usage, 'checkpoint_not_found');

/** ANSI styling that switches itself off when stdout is not a terminal or `NO_COLOR` is set (https://no-color.org). */
export interface Style {
  readonly enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
}

export function makeStyle(io: CliIo): Style {
  const enabled = io.stdout.isTTY === true && !('NO_COLOR' in io.env && io.env.NO_COLOR !== '') && io.env.TERM !== 'dumb';
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\u001b[${open}m${s}\u001b[${close}m` : s);
  return { enabled, bold: wrap(1, 22), dim: wrap(2, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39) };
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const visible = (s: string): number => [...s.replace(ANSI, '')].length;

/** Renders rows as an aligned table; numbers (columns named in `right`) align right. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => visible(r[i] ?? ''))));
  const line = (r: readonly string[]): string =>
    r
      .map((cell, i) => {
        const pad = ' '.repeat(widths[i]! - visible(cell));
        return right.has(i) ? pad + cell : cell + pad;
      })
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** `1536` → `1.5 KB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** Version of every command's `--json` output (schemas/cli/<command>.v1.json); bumped only on a breaking change. */
export const JSON_SCHEMA_VERSION = 1;

/** Prints `value` as JSON (the `--json` output of every command), stamped with `schemaVersion` first. */
export function printJson(io: CliIo, value: object): void {
  io.stdout.write(`${JSON.stringify({ schemaVersion: JSON_SCHEMA_VERSION, ...value }, null, 2)}\n`);
}
