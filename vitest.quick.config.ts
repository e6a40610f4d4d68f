/**
 * `npm run test:quick`: the inner loop. Every test but the ones that start processes,
 * servers or a browser, build the package, or run LangGraph's full validation suite —
 * those run in `npm test` (and CI), which is the one that counts.
 */
import { availableParallelism } from 'node:os';
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

export default mergeConfig(
  base,
  defineConfig({
    test: {
      // Workers that keep their modules between files (no re-import of src for each of ~100
      // files): fine for the inner loop, whose files share no global state they do not reset;
      // `npm test` keeps full isolation.
      isolate: false,
      // Every core (vitest leaves one free by default: on a 2-core machine, one worker).
      maxWorkers: availableParallelism(),
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
        // The slowest of the rest (3-11 s each: type checks by tsc, fault sweeps over every
        // file-system call, long property runs); npm test runs them.
        'tests/storage/fs.journal.test.ts',
        'tests/profiles/e2e.test.ts',
        'tests/types/types.test.ts',
        'tests/writer/auto-retention.test.ts',
        'tests/ui/server.test.ts',
        'tests/github/conflicts.test.ts',
        'tests/retention/spec.test.ts',
        'tests/github/conformance.test.ts',
        'tests/retention/plan.property.test.ts',
        'tests/storage/fs.journal.conformance.test.ts',
      ],
    },
  }),
);
