import { readFileSync } from 'node:fs';
import { defineConfig, type Options } from 'tsup';

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

/** One entry per public subpath: `savepoint`, `savepoint/fs`, `savepoint/testing`, … */
export const entry: Record<string, string> = {
  index: 'src/index.ts',
  fs: 'src/entries/fs.ts',
  github: 'src/entries/github.ts',
  langgraph: 'src/entries/langgraph.ts',
  postgres: 'src/entries/postgres.ts',
  testing: 'src/entries/testing.ts',
  toolkit: 'src/entries/toolkit.ts',
  'snapshot-lifecycle': 'src/entries/snapshot-lifecycle.ts',
  'phased-workflow': 'src/entries/phased-workflow.ts',
  'plan-executor': 'src/entries/plan-executor.ts',
  'handoff-markdown': 'src/entries/handoff-markdown.ts',
  'progress-protocol': 'src/entries/progress-protocol.ts',
};

const common: Options = {
  entry,
  dts: true,
  sourcemap: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
  outDir: 'dist',
  define: { __SAVEPOINT_VERSION__: JSON.stringify(version) },
};

export default defineConfig([
  // The CLI (`bin`) is an ESM program with a shebang, built with the ESM entries so chunks are shared.
  // Each flavour gets its own declarations: an ESM `.d.ts` that re-exported the `.d.cts` made an
  // ESM app see the peers' CommonJS types (two `@langchain/core`s, so `compile()` refused the saver).
  // The `.d.cts` files are the `.d.ts` ones with their relative imports renamed, written after
  // tsup by scripts/cjs-declarations.mjs (`npm run build` runs both).
  { ...common, entry: { ...entry, cli: 'src/cli/main.ts' }, format: ['esm'], dts: { entry } },
  { ...common, format: ['cjs'], dts: false },
]);
