/**
 * A child process's stdout as lines, with a way to wait for one: the shared core of the
 * process tests' children (tests/storage/fs/child.ts, tests/storage/postgres/child.ts, and the writer
 * fixtures' JSON-line children through startJsonChild).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A running child with line-based stdout. */
export interface LineChild {
  readonly proc: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Resolves a stdout line matching `test` (see {@link LineChildOptions.consume}); rejects on timeout or exit. */
  waitFor(test: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves when the child has exited (and been reaped). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Writes a line to the child's stdin (when it has one). */
  send(line: string): void;
  stderr(): string;
}

/** Options of {@link watchLines}. */
export interface LineChildOptions {
  /** @default 20_000 */
  readonly timeoutMs?: number;
  /**
   * `true`: each wait sees only lines after the one the previous wait returned (a dialogue);
   * `false`: the first matching line ever printed (a log). @default false
   */
  readonly consume?: boolean;
}

/** Watches `proc`'s stdout (and collects its stderr for messages). */
export function watchLines(proc: ChildProcess, options: LineChildOptions = {}): LineChild {
  const lines: string[] = [];
  let consumed = 0;
  const waiters: { test: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.test(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    lines,
    exited,
    stderr: () => err,
    send: (line) => proc.stdin!.write(`${line}\n`),
    waitFor(test, timeoutMs = options.timeoutMs ?? 20_000) {
      const from = options.consume ? consumed : 0;
      const seen = lines.slice(from).find(test);
      if (seen !== undefined) {
        consumed = lines.indexOf(seen, from) + 1;
        return Promise.resolve(seen);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`child did not print the expected line within ${timeoutMs} ms; stderr: ${err}`)),
          timeoutMs,
        );
        const waiter = {
          test,
          resolve: (l: string) => {
            clearTimeout(timer);
            consumed = lines.length;
            resolve(l);
          },
        };
        waiters.push(waiter);
        void exited.then(() => {
          if (waiters.includes(waiter)) {
            clearTimeout(timer);
            reject(new Error(`child exited before printing the expected line; stdout: ${lines.slice(-5).join(' | ')}; stderr: ${err}`));
          }
        });
      });
    },
  };
}

/** One JSON line of a child (the writer fixtures in tests/fixtures/writer/). */
export interface Line {
  type: string;
  pid: number;
  [k: string]: unknown;
}

/** A child speaking line-delimited JSON (see {@link startJsonChild}). */
export interface JsonLineChild {
  readonly child: ChildProcess;
  /** Every JSON line so far (a line cut by SIGKILL, not JSON, is left out). */
  readonly lines: Line[];
  /** The first line matching `pred` (evaluated on every new line), or undefined after `ms` or once the child has exited without one. */
  waitFor(pred: (l: Line) => boolean, ms: number): Promise<Line | undefined>;
  readonly exited: Promise<unknown>;
}

const parseLine = (text: string): Line | undefined => {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' ? (v as Line) : undefined;
  } catch {
    return undefined; // a line cut by SIGKILL cannot be an acknowledgement
  }
};

/** Spawns `node <bundle> ...args` (stderr inherited) and watches its JSON lines. */
export function startJsonChild(bundle: string, args: string[]): JsonLineChild {
  const child = spawn(process.execPath, [bundle, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const watched = watchLines(child);
  const parsed = (): Line[] => watched.lines.map(parseLine).filter((l): l is Line => l !== undefined);
  return {
    child,
    get lines() {
      return parsed();
    },
    exited: watched.exited,
    waitFor: (pred, ms) =>
      watched
        .waitFor((text) => {
          const line = parseLine(text);
          return line !== undefined && pred(line);
        }, ms)
        .then(
          (text) => parseLine(text),
          // Timed out, or exited: the lines still in the pipe arrive just after the exit.
          () => new Promise<Line | undefined>((resolve) => setTimeout(() => resolve(parsed().find(pred)), 20)),
        ),
  };
}
