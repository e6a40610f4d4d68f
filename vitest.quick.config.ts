/**
 * `npm run test:quick`: the inner loop. Every test but the ones that start processes,
 * servers or a browser, build the package, or run LangGraph's full validation suite —
 * those run in `npm test` (and CI), which is the one that counts.
 */
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: [
        '**/node_modules/**',
        'tests/browser/**',
        'tests/package/**',
        'tests/postgres/**',
        'tests/ui/browser.test.ts',
        'tests/ui/cli-ui.test.ts',
        'tests/cli/**',
        'tests/examples/**',
        'tests/langgraph/validation-*.test.ts',
        'tests/langgraph/crash-resume.test.ts',
        'tests/**/*process*.test.ts',
        'tests/**/*crash*.test.ts',
        'tests/storage/fs.containment-race.test.ts',
        'tests/github/live.test.ts',
        'tests/github/spec-validation.test.ts',
        'tests/github/fault-matrix.test.ts',
      ],
    },
  }),
);
