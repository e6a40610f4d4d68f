import { defineConfig, type Options } from 'tsup';

/** One entry per public subpath: `savepoint`, `savepoint/fs`, `savepoint/testing`, … */
export const entry: Record<string, string> = {
  index: 'src/index.ts',
  fs: 'src/entries/fs.ts',
  github: 'src/entries/github.ts',
  testing: 'src/entries/testing.ts',
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
};

export default defineConfig([
  { ...common, format: ['esm'], clean: true },
  // nanoid 5 is ESM-only; Node < 20.19 cannot require() it, so the CJS build carries its own copy.
  { ...common, format: ['cjs'], noExternal: ['nanoid'] },
]);
