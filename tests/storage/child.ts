/**
 * Child processes for the fs tests. A child imports `savepoint/fs` from a one-file ESM
 * bundle of src/entries/fs.ts made with esbuild (plain `node` starts in ~0.1 s; with the
 * tsx loader it takes ~0.3 s, which dominated the crash test). When esbuild cannot be
 * loaded, children fall back to importing the TypeScript source through tsx.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIXTURES = join(ROOT, 'tests', 'fixtures', 'storage');

export interface ChildModule {
  /** URL the child imports `fsStorage` from. */
  readonly url: string;
  /** Extra node flags (the tsx loader in the fallback). */
  readonly execArgv: readonly string[];
  /** How it was made, for the test log. */
  readonly how: 'esbuild bundle' | 'tsx loader';
  dispose(): void;
}

export async function buildChildModule(): Promise<ChildModule> {
  const entry = join(ROOT, 'src', 'entries', 'fs.ts');
  try {
    const esbuild = await import('esbuild');
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-fs-bundle-'));
    const outfile = join(dir, 'fs.mjs');
    await esbuild.build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile, logLevel: 'silent' });
    return { url: pathToFileURL(outfile).href, execArgv: [], how: 'esbuild bundle', dispose: () => rmSync(dir, { recursive: true, force: true }) };
  } catch {
    return { url: pathToFileURL(entry).href, execArgv: ['--import', 'tsx'], how: 'tsx loader', dispose: () => undefined };
  }
}

/** A running child with line-based stdout. */
export interface LineChild {
  readonly proc: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Resolves the next stdout line matching `test` (already-seen lines included). */
  waitFor(test: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves when the child has exited (and been reaped). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  send(line: string): void;
  stderr(): string;
}

export function spawnChild(module: ChildModule, script: string, args: readonly string[]): LineChild {
  const proc = spawn(process.execPath, [...module.execArgv, join(FIXTURES, script), module.url, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let consumed = 0;
  const waiters: { test: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
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
    waitFor(test, timeoutMs = 20_000) {
      const seen = lines.slice(consumed).find(test);
      if (seen !== undefined) {
        consumed = lines.indexOf(seen, consumed) + 1;
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
            reject(new Error(`child exited before printing the expected line; stderr: ${err}`));
          }
        });
      });
    },
  };
}
