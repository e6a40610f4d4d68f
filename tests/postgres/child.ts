/**
 * Child processes for the PostgreSQL tests and bench. Children import savepoint's core and
 * `savepoint/postgres` from one ESM bundle of the sources (plain `node` starts several times
 * faster than through the tsx loader, which matters for 200 kills); `pg` is bundled in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PG_FIXTURES = join(ROOT, 'tests', 'fixtures', 'postgres');

/** The bundle children import (`createWriter`, `defaultProfile`, `postgresStorage`, …). */
export interface ChildBundle {
  readonly url: string;
  dispose(): void;
}

export async function buildChildBundle(): Promise<ChildBundle> {
  const esbuild = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-pg-bundle-'));
  const entry = join(dir, 'entry.ts');
  writeFileSync(entry, `export * from ${JSON.stringify(join(ROOT, 'src', 'index.ts'))};\nexport * from ${JSON.stringify(join(ROOT, 'src', 'entries', 'postgres.ts'))};\n`);
  const outfile = join(dir, 'bundle.mjs');
  await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'silent',
    nodePaths: [join(ROOT, 'node_modules')],
    external: ['pg-native'],
    define: { __SAVEPOINT_VERSION__: '"0.0.0-test"' },
    // pg is CommonJS: give its require() calls a real require inside the ESM bundle.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  return { url: pathToFileURL(outfile).href, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A running child with line-based stdout. */
export interface LineChild {
  readonly proc: ChildProcess;
  readonly lines: string[];
  /** Resolves the first line (seen or future) matching `test`. */
  waitFor(test: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/** Runs `tests/fixtures/postgres/<script>` with the bundle URL and a JSON config as arguments. */
export function spawnPgChild(bundle: ChildBundle, script: string, config: Record<string, unknown>): LineChild {
  const proc = spawn(process.execPath, [join(PG_FIXTURES, script), bundle.url, JSON.stringify(config)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
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
    waitFor(test, timeoutMs = 30_000) {
      const seen = lines.find(test);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`child did not print the expected line within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
        const waiter = {
          test,
          resolve: (l: string) => {
            clearTimeout(timer);
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
