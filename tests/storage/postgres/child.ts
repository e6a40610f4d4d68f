/**
 * Child processes for the PostgreSQL tests and bench. Children import savepoint's core and
 * `savepoint/postgres` from one ESM bundle of the sources (plain `node` starts several times
 * faster than through the tsx loader, which matters for 200 kills); `pg` is bundled in.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { watchLines, type LineChild } from '../../support/line-child.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
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
  writeFileSync(
    entry,
    `export * from ${JSON.stringify(join(ROOT, 'src', 'index.ts'))};\nexport * from ${JSON.stringify(join(ROOT, 'src', 'entries', 'postgres.ts'))};\n`,
  );
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

export type { LineChild } from '../../support/line-child.js';

/** Runs `tests/fixtures/postgres/<script>` with the bundle URL and a JSON config as arguments. */
export function spawnPgChild(bundle: ChildBundle, script: string, config: Record<string, unknown>): LineChild {
  const proc = spawn(process.execPath, [join(PG_FIXTURES, script), bundle.url, JSON.stringify(config)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return watchLines(proc, { timeoutMs: 30_000 });
}
