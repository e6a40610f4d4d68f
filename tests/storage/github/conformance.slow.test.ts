import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { githubStorage } from 'savepoint/github';
import { runStorageConformance, startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { TOKEN, virtualClock } from '../../support/github.js';

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

// githubStorage's versions are git blob shas (content addresses): GitHub's own
// conditional-write token, what makes write-then-verify and "did my timed-out write land?"
// possible without downloading anything. Identical bytes therefore have the same version,
// which the suite checks instead of "a new version on every write" (versions: 'content').
// Lost updates are still impossible: a write conditioned on a version replaces exactly the
// content that version names.
runStorageConformance({
  name: 'githubStorage',
  describe,
  it,
  versions: 'content',
  fc,
  create: () =>
    githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: TOKEN,
      baseUrl: gh.url,
      clock,
      basePath: `conformance/${++n}`,
      emergencyQueue: 'memory',
      serializeWrites: 'adapter',
      // GitHub accepts 100 MB; a smaller declared limit checks the same enforcement
      // without pushing 100 MB through the emulator (1.4 GB of memory on a shared machine).
      maxValueBytes: 4 * 1024 * 1024,
    }),
  capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes: 4 * 1024 * 1024, versionsPerWrite: false },
  nestedKeys: false,
  propertyRuns: 15,
  largeValueBytes: 1024 * 1024 + 1,
  timeoutMs: 120_000,
});
