import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointError, type BatchOperation } from 'savepoint';
import { githubStorage, type GitHubStorage, type GitHubStorageOptions } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { TOKEN, text, virtualClock } from '../../support/github.js';

// GitHub's batch once threw a raw TypeError on malformed operations; every public entry
// validates its arguments and answers with a CheckpointError. Nothing malformed may
// reach GitHub either: the request log stays empty.
let gh: GitHubEmulator;
const clock = virtualClock();
beforeAll(async () => {
  gh = await startGitHubEmulator({ token: TOKEN, clock, secondaryLimit: false, logBodies: false });
});
afterAll(async () => {
  await gh.close();
});
const base = (): GitHubStorageOptions => ({
  owner: gh.owner,
  repo: gh.repo,
  token: TOKEN,
  baseUrl: gh.url,
  clock,
  minWriteIntervalMs: 0,
  emergencyQueue: 'memory',
});
const make = (): GitHubStorage => githubStorage(base());

async function refused(p: () => Promise<unknown>): Promise<CheckpointError> {
  const err = await Promise.resolve()
    .then(p)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(CheckpointError);
  return err as CheckpointError;
}

describe('githubStorage validates every argument', () => {
  it('malformed batches are CheckpointErrors, and nothing is sent', async () => {
    const s = make();
    const before = gh.requestLog.length;
    const bad: unknown[] = [
      undefined,
      null,
      'put',
      { type: 'put', key: 'a' },
      [null],
      [42],
      [{}],
      [{ type: 'rename', key: 'a' }],
      [{ type: 'put', key: '../escape', bytes: text('x') }],
      [{ type: 'put', key: 'a', bytes: 'not bytes' }],
      [{ type: 'put', key: 'a', bytes: text('x'), ifVersion: 7 }],
      [{ type: 'put', key: 'a', bytes: text('x'), ifAbsent: 'yes' }],
      [{ type: 'put', key: 'a', bytes: text('x'), ifAbsent: true, ifVersion: 'abc' }],
      [{ type: 'delete', key: 'a', ifVersion: {} }],
      [{ type: 'check', key: 'a' }],
      [{ type: 'check', key: 'a', ifVersion: 3 }],
      [
        { type: 'put', key: 'a', bytes: text('x') },
        { type: 'check', key: 'a', ifAbsent: true },
      ],
    ];
    for (const ops of bad) {
      const err = await refused(() => s.batch(ops as BatchOperation[]));
      expect(['checkpoint_config_invalid', 'checkpoint_key_invalid', 'checkpoint_conflict']).toContain(err.reasonCode);
    }
    expect(gh.requestLog.length).toBe(before);
  });

  it('property: any value given as a batch operation is accepted or refused with a CheckpointError, never a TypeError', async () => {
    const s = make();
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.anything(),
            fc.record(
              {
                type: fc.constantFrom('put', 'delete', 'check'),
                key: fc.constantFrom('ok', '', '/x', 'a/../b'),
                bytes: fc.anything(),
                ifVersion: fc.anything(),
                ifAbsent: fc.anything(),
              },
              { requiredKeys: ['type'] },
            ),
          ),
          { maxLength: 3 },
        ),
        async (ops) => {
          const before = gh.requestLog.length;
          const err = await s.batch(ops as BatchOperation[]).then(
            () => undefined,
            (e: unknown) => e,
          );
          // Only a fully valid batch may reach GitHub.
          if (err !== undefined) {
            expect(err).toBeInstanceOf(CheckpointError);
            if ((err as CheckpointError).reasonCode !== 'checkpoint_conflict') expect(gh.requestLog.length).toBe(before);
          }
        },
      ),
      { numRuns: 150 },
    );
  }, 120_000);

  it('bad put, delete, get, list and discardPendingWrite arguments are CheckpointErrors', async () => {
    const s = make();
    const before = gh.requestLog.length;
    const calls: (() => Promise<unknown>)[] = [
      () => s.put('a', text('x'), null as never),
      () => s.put('a', text('x'), { ifVersion: 5 } as never),
      () => s.put('a', text('x'), { ifAbsent: 1 } as never),
      () => s.put('a', text('x'), { ifAbsent: true, ifVersion: 'abc' }),
      () => s.put('a', 'text' as never),
      () => s.put(undefined as never, text('x')),
      () => s.delete('a', 'v1' as never),
      () => s.get(17 as never),
      async () => {
        for await (const e of s.list(null as never)) void e;
      },
      () => s.discardPendingWrite('1' as never),
    ];
    for (const call of calls) {
      const err = await refused(call);
      expect(['checkpoint_config_invalid', 'checkpoint_key_invalid', 'checkpoint_schema_invalid']).toContain(err.reasonCode);
    }
    expect(gh.requestLog.length).toBe(before);
  });

  it('bad factory options are refused with checkpoint_config_invalid', () => {
    const cases: Partial<Record<keyof GitHubStorageOptions, unknown>>[] = [
      { maxConflictRetries: -1 },
      { maxConflictRetries: 1.5 },
      { maxRetries: Number.NaN },
      { minWriteIntervalMs: '1000' },
      { requestTimeoutMs: 0 },
      { maxRateLimitWaitMs: -5 },
      { lowRateLimit: Infinity },
      { inlineMaxBytes: -1 },
      { readYourWritesMs: null },
      { verify: 'maybe' },
      { serializeWrites: 'global' },
      { mergeRunIndexes: 'yes' },
      { fetch: 'https://example.com' },
      { onEvent: 42 },
      { commitMessage: 'savepoint' },
      { baseUrl: 'ftp://example.com' },
      { baseUrl: 7 },
      { branch: 5 },
      { basePath: ['a'] },
      { userAgent: 'a\r\nX-Injected: 1' },
      { clock: { now: () => 0 } },
      { committer: { name: 'x' } },
      { maxValueBytes: '1' },
      { emergencyQueue: 'disk' },
      { emergencyQueue: { dir: '' } },
      { emergencyQueue: { storage: {} } },
      { owner: '../x' },
      { repo: '' },
      { token: '' },
      { token: 12 },
    ];
    for (const extra of cases) {
      let err: unknown;
      try {
        githubStorage({ ...base(), ...extra } as GitHubStorageOptions);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(extra)).toBeInstanceOf(CheckpointError);
      expect((err as CheckpointError).reasonCode, JSON.stringify(extra)).toBe('checkpoint_config_invalid');
    }
    expect(() => githubStorage(undefined as never)).toThrow(CheckpointError);
  });
});
