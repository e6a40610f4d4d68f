/**
 * Child processes for the fs tests. A child imports `savepoint/fs` from a one-file ESM
 * bundle of src/entries/fs.ts made with esbuild (plain `node` starts in ~0.1 s; with the
 * tsx loader it takes ~0.3 s, which dominated the crash test). When esbuild cannot be
 * loaded, children fall back to importing the TypeScript source through tsx.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { watchLines, type LineChild } from '../../support/line-child.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
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

/** Bundles `entry` (a path from the repository's root; default `savepoint/fs`'s entry) for children to import. */
export async function buildChildModule(entryPath = 'src/entries/fs.ts'): Promise<ChildModule> {
  const entry = join(ROOT, entryPath);
  try {
    const esbuild = await import('esbuild');
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-fs-bundle-'));
    const outfile = join(dir, 'fs.mjs');
    await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      logLevel: 'silent',
    });
    return {
      url: pathToFileURL(outfile).href,
      execArgv: [],
      how: 'esbuild bundle',
      dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch {
    return { url: pathToFileURL(entry).href, execArgv: ['--import', 'tsx'], how: 'tsx loader', dispose: () => undefined };
  }
}

export type { LineChild } from '../../support/line-child.js';

export function spawnChild(module: ChildModule, script: string, args: readonly string[]): LineChild {
  const proc = spawn(process.execPath, [...module.execArgv, join(FIXTURES, script), module.url, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // A dialogue: each wait sees only what the child printed after the previous answer.
  return watchLines(proc, { consume: true, timeoutMs: 20_000 });
}
