import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { encryptedStorage, EncryptionKey } from 'savepoint';
import { githubStorage } from 'savepoint/github';
import { runStorageConformance, startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { TOKEN, virtualClock } from '../../support/github.js';

// encryptedStorage over githubStorage on the emulator. A random nonce per write makes every
// write's bytes new, so the blob-sha versions behave per write: the contract's own semantics.
const clock = virtualClock();
let gh: GitHubEmulator;
let n = 0;
beforeAll(async () => {
  gh = await startGitHubEmulator({ token: TOKEN, clock, logBodies: false, secondaryLimit: false });
});
afterAll(async () => {
  await gh.close();
});
const key = EncryptionKey.generate();
const limit = 1024 * 1024;

runStorageConformance({
  name: 'encryptedStorage(githubStorage)',
  describe,
  it,
  fc,
  versions: 'per-write',
  create: () =>
    encryptedStorage(
      githubStorage({
        owner: gh.owner,
        repo: gh.repo,
        token: TOKEN,
        baseUrl: gh.url,
        clock,
        basePath: `encrypted/${++n}`,
        emergencyQueue: 'memory',
        serializeWrites: 'adapter',
        maxValueBytes: limit,
      }),
      { keys: key },
    ),
  capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes: limit - 40, versionsPerWrite: false },
  nestedKeys: false,
  propertyRuns: 8,
  largeValueBytes: 256 * 1024,
  timeoutMs: 120_000,
});
