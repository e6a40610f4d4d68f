/**
 * A child process speaking line-delimited JSON on stdout (the writer fixtures in
 * tests/fixtures/writer/), with a way to wait for a line. Shared by the process tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** One JSON line of a child. */
export interface Line {
  type: string;
  pid: number;
  [k: string]: unknown;
}

/** Spawns `node <bundle> ...args` and collects its lines. */
export function startChild(bundle: string, args: string[]): { child: ChildProcess; lines: Line[]; waitFor: (pred: (l: Line) => boolean, ms: number) => Promise<Line | undefined>; exited: Promise<void> } {
  const child = spawn(process.execPath, [bundle, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: Line[] = [];
  const waiters: { pred: (l: Line) => boolean; resolve: (l: Line | undefined) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      return; // a line cut by SIGKILL cannot be an acknowledgement
    }
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.pred(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waitFor = (pred: (l: Line) => boolean, ms: number): Promise<Line | undefined> => {
    const seen = lines.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const w = { pred, resolve };
      waiters.push(w);
      const timer = setTimeout(() => {
        const i = waiters.indexOf(w);
        if (i >= 0) waiters.splice(i, 1);
        resolve(undefined);
      }, ms);
      void exited.then(() => {
        clearTimeout(timer);
        setTimeout(() => resolve(lines.find(pred)), 20);
      });
    });
  };
  return { child, lines, waitFor, exited };
}
