import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { githubStorage } from 'savepoint/github';
import { runStorageConformance, startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { TOKEN, virtualClock } from './helpers.js';

// The exported storage conformance suite, run against githubStorage on the emulator.
// One emulator for the whole file; every adapter gets its own basePath, so each test
// starts from an empty store, as the suite requires.
const clock = virtualClock();
let gh: GitHubEmulator;
let n = 0;
beforeAll(async () => {
  gh = await startGitHubEmulator({ token: TOKEN, clock, logBodies: false, secondaryLimit: false });
});
afterAll(async () => {
  await gh.close();
});

/**
 * githubStorage's versions are git blob shas (content addresses): GitHub's own
 * conditional-write token, what makes write-then-verify and "did my timed-out write
 * land?" possible without downloading anything, and what makes a queued write's version
 * real before it is pushed. Writing identical bytes again therefore yields the same
 * version, and A → B → A makes the first version current again. The suite (as of this
 * commit) requires a version to change on every write, so exactly these checks fail, and
 * are declared as expected failures here — `it.fails` turns red if they ever pass, so
 * this list cannot go stale. Lost updates are still impossible: a version is "the
 * content I read", and a write conditioned on it replaces exactly that content. The
 * model-based property runs with a fixed seed (its counterexample is a key rewritten
 * with identical bytes); tests/github/adapter.test.ts runs the same kind of property
 * with content-addressed versions in the model.
 */
const CONTENT_ADDRESSED_VERSION_CHECKS = new Set([
  'put replaces, and the version changes on every write, even of the same bytes',
  'ifVersion with the current version replaces, and returns a new version',
  'a version is never current again once replaced, even after delete and re-create',
  '15 random operation sequences match a reference model',
]);

runStorageConformance({
  name: 'githubStorage',
  describe,
  it: (name, fn, timeout) => (CONTENT_ADDRESSED_VERSION_CHECKS.has(name) ? it.fails : it)(name, fn, timeout),
  fc,
  create: () =>
    githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: TOKEN,
      baseUrl: gh.url,
      clock,
      basePath: `conformance/${++n}`,
      serializeWrites: 'adapter',
      // GitHub accepts 100 MB; a smaller declared limit checks the same enforcement
      // without pushing 100 MB through the emulator (1.4 GB of memory on a shared machine).
      maxValueBytes: 4 * 1024 * 1024,
    }),
  capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes: 4 * 1024 * 1024 },
  nestedKeys: false,
  propertyRuns: 15,
  propertySeed: -753541754,
  largeValueBytes: 1024 * 1024 + 1,
  timeoutMs: 120_000,
});
