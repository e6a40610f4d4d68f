/**
 * Builds dist/ once per change of src/, shared by every test file that needs the built
 * package (pack, consumers, CLI, browser). Parallel vitest workers take turns through a
 * lock file, so only one runs tsup.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TMP = join(ROOT, '.tmp');
const STAMP = join(TMP, 'build-stamp');
const LOCK = join(TMP, 'build.lock');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function sourceFingerprint(): string {
  const files = ['package.json', 'tsup.config.ts', 'tsconfig.json'].map((f) => statSync(join(ROOT, f)).mtimeMs);
  return String(Math.max(newestMtime(join(ROOT, 'src')), ...files));
}

/** Files every complete build writes (ESM, CJS, types, the CLI). */
const BUILT = ['index.js', 'index.cjs', 'index.d.ts', 'cli.js', 'testing.d.cts'].map((f) => join(ROOT, 'dist', f));

function upToDate(): boolean {
  const fingerprint = sourceFingerprint();
  if (existsSync(STAMP) && existsSync(BUILT[0]!) && readFileSync(STAMP, 'utf8') === fingerprint) return true;
  // A build made outside the tests (`npm run build`, as .ci/run does before `npm test`) is as
  // good, once every file a complete build writes is newer than every source.
  return BUILT.every((f) => existsSync(f) && statSync(f).mtimeMs > Number(fingerprint));
}

/** Makes sure dist/ reflects src/; builds with tsup when it does not. */
export async function ensureBuilt(): Promise<void> {
  mkdirSync(TMP, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    if (upToDate()) return;
    let fd: number | undefined;
    try {
      fd = openSync(LOCK, 'wx');
    } catch {
      // Another worker is building; a lock older than 5 minutes belongs to a dead run.
      if (existsSync(LOCK) && Date.now() - statSync(LOCK).mtimeMs > 300_000) rmSync(LOCK, { force: true });
      if (attempt > 600) throw new Error('timed out waiting for another test worker to build dist/');
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    try {
      if (upToDate()) return;
      const fingerprint = sourceFingerprint();
      // tsup's configs run concurrently, so none of them cleans; stale files must not survive.
      rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
      // What `npm run build` runs, without npm.
      execFileSync(process.execPath, [join(ROOT, 'node_modules', 'tsup', 'dist', 'cli-default.js')], { cwd: ROOT, stdio: 'pipe' });
      execFileSync(process.execPath, [join(ROOT, 'scripts', 'cjs-declarations.mjs')], { cwd: ROOT, stdio: 'pipe' });
      writeFileSync(STAMP, fingerprint);
      return;
    } finally {
      closeSync(fd);
      rmSync(LOCK, { force: true });
    }
  }
}
