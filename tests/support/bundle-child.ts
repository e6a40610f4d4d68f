/**
 * Bundles a TypeScript child-process script into one .mjs with esbuild, resolving the
 * package's public names (`savepoint`, `savepoint/<subpath>`) to src/ as vitest does. Crash
 * tests restart their child dozens of times: a plain `node` start of a bundle costs ~0.1 s,
 * the tsx loader ~0.3 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll } from 'vitest';
import { ROOT } from './build.js';

export async function bundleChild(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'error',
    minify: true,
    // Some bundled CommonJS dependencies (ajv) call require(); give the ESM bundle one.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    plugins: [
      {
        name: 'savepoint-alias',
        setup(b) {
          b.onResolve({ filter: /^savepoint(\/.*)?$/ }, (args) => ({
            path:
              args.path === 'savepoint' ? join(ROOT, 'src/index.ts') : join(ROOT, `src/entries/${args.path.slice('savepoint/'.length)}.ts`),
          }));
        },
      },
    ],
  });
}

/**
 * For a test file: before its tests, makes a temp folder (`work`, for the children's stores)
 * and bundles `entry` into it (`bundle`); after them, removes the folder. Read the fields
 * inside tests, not at module load.
 */
export function bundledChildPerFile(entry: string, prefix: string): { readonly work: string; readonly bundle: string } {
  const paths = { work: '', bundle: '' };
  beforeAll(async () => {
    paths.work = mkdtempSync(join(tmpdir(), prefix));
    paths.bundle = join(paths.work, 'child.mjs');
    await bundleChild(entry, paths.bundle);
  });
  afterAll(() => {
    rmSync(paths.work, { recursive: true, force: true });
  });
  return paths;
}
