/**
 * A child process's stdout as lines, with a way to wait for one: the shared core of the
 * process tests' children (tests/storage/child.ts, tests/postgres/child.ts).
 */
import type { ChildProcess } from 'node:child_process';
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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
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
        const timer = setTimeout(() => reject(new Error(`child did not print the expected line within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
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
