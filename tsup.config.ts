import { readFileSync, writeFileSync } from 'node:fs';
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

/**
 * The declarations are built once, for CommonJS (`.d.cts`); each ESM entry's `.d.ts` is one
 * line that re-exports its `.d.cts`. Two full sets (a `.d.ts` and a `.d.cts` twin of every
 * declaration chunk) would ship every type twice (issue 18), and one set also gives both
 * flavours the same class identities.
 */
function writeEsmDeclarations(): void {
  for (const name of Object.keys(entry)) writeFileSync(`dist/${name}.d.ts`, `export * from './${name}.cjs';\n`);
}

export default defineConfig([
  // The CLI (`bin`) is an ESM program with a shebang, built with the ESM entries so chunks are shared.
  { ...common, entry: { ...entry, cli: 'src/cli/main.ts' }, format: ['esm'], dts: false, onSuccess: async () => writeEsmDeclarations() },
  { ...common, format: ['cjs'] },
]);
