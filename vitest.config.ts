import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string): string => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

// Every test file belongs to one project, named by its file name:
// - `*.process.test.ts`: runs savepoint, its CLI or an example in other processes, starts a
//   server (PostgreSQL), a browser or tsc, or builds the package (a quick `git` or `mkfifo` call
//   does not count);
// - `*.slow.test.ts`: in-process but long (fault sweeps over every call, long property runs,
//   LangGraph's validation suite);
// - any other `*.test.ts`: `unit`, in-process and fast.
// `npm test` runs every project. `unit` files run in workers that keep their modules between
// files (not isolated): they share no global state they do not reset, and re-importing the
// library for each of them was most of the project's time (import 243 s of a 337 s run on two
// cores, 27 s of 163 s without). `process` and `slow` files stay isolated, a fresh worker each.
// `npm run test:quick` (the inner loop) runs `unit` alone, on every core.
const files = ['tests/**/*.test.ts', 'examples/**/*.test.ts'];
const only = (kind: string): string[] => files.map((f) => f.replace('*.test.ts', `*.${kind}.test.ts`));

// The slow project's sweeps inject their faults in-process and check nothing a real disk's
// fsync adds (power loss is simulated, tests/support/power-loss): their temporary
// directories go to memory when there is a memory file system, where an fsync costs
// microseconds instead of milliseconds (and does not queue behind other processes' writes).
const memoryTmp = existsSync('/dev/shm') ? { TMPDIR: '/dev/shm' } : {};

export default defineConfig({
  resolve: {
    // Tests and examples import the package by its public name, as users do.
    alias: [
      { find: /^savepoint$/, replacement: src('index.ts') },
      { find: /^savepoint\/(.*)$/, replacement: src('entries/$1.ts') },
    ],
  },
  test: {
    // Crash tests spawn child processes; two cores are shared with everything else.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // At least two files at a time, also on two cores (vitest's default there is one): much of a
    // run is spent waiting on child processes, PostgreSQL, a browser or fsync, not computing.
    // The projects inherit this, which `--maxWorkers` on the command line does not change:
    // `VITEST_MAX_WORKERS=1 npm test` runs one file at a time.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: { name: 'unit', isolate: false, include: files, exclude: ['**/node_modules/**', ...only('process'), ...only('slow')] },
      },
      { extends: true, test: { name: 'process', include: only('process') } },
      { extends: true, test: { name: 'slow', include: only('slow'), env: memoryTmp } },
    ],
  },
});
