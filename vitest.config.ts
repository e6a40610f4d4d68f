import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string): string => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests and examples import the package by its public name, as users do.
    alias: [
      { find: /^savepoint$/, replacement: src('index.ts') },
      { find: /^savepoint\/(.*)$/, replacement: src('entries/$1.ts') },
    ],
  },
  test: {
    include: ['tests/**/*.test.ts', 'examples/**/*.test.ts'],
    // Crash tests spawn child processes; two cores are shared with everything else.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
