/**
 * Opt-in live suite against the real GitHub API. Skipped unless both are set:
 *
 *   SAVEPOINT_GITHUB_LIVE_REPO=owner/repo[@branch]   a THROWAWAY repository (it gets commits)
 *   GITHUB_TOKEN=...                                  Contents: read and write on it
 *
 *   SAVEPOINT_GITHUB_LIVE_REPO=me/scratch GITHUB_TOKEN=ghp_... npx vitest run tests/storage/github/live.process.test.ts
 *
 * Everything is written below `savepoint-live/<random>/` and deleted at the end. It checks
 * what the emulator claims about GitHub: status codes, blob-sha versions, atomic batches,
 * conflicts, large files, listing, and that the token never appears in errors.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { listAll } from 'savepoint';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { gitBlobSha, githubStorage, type GitHubStorage } from 'savepoint/github';
import { deepStrings } from '../../support/github.js';

const target = process.env.SAVEPOINT_GITHUB_LIVE_REPO;
const token = process.env.GITHUB_TOKEN;
const live = Boolean(target && token);

describe.skipIf(!live)('githubStorage on the real GitHub API (opt-in)', () => {
  const [repoPart, branch] = (target ?? 'x/y').split('@');
  const [owner, repo] = repoPart!.split('/');
  const basePath = `savepoint-live/${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  let storage: GitHubStorage;
  const make = (): GitHubStorage => githubStorage({ owner: owner!, repo: repo!, token: token!, basePath, ...(branch ? { branch } : {}) });

  afterAll(async () => {
    if (!storage) return;
    const keys = (await listAll(storage, '')).map((e) => e.key);
    if (keys.length > 0) await storage.batch(keys.map((key) => ({ type: 'delete' as const, key })));
    await storage.close();
  });

  it('puts, reads, lists and deletes with blob-sha versions', { timeout: 120_000 }, async () => {
    storage = make();
    const bytes = utf8Encode('{"live":true}');
    const { version } = await storage.put('a/one.json', bytes, { ifAbsent: true });
    expect(version).toBe(await gitBlobSha(bytes));
    expect((await storage.get('a/one.json'))?.version).toBe(version);
    await expect(storage.put('a/one.json', bytes, { ifAbsent: true })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    await expect(storage.put('a/one.json', utf8Encode('x'), { ifVersion: '0'.repeat(40) })).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
    });
    expect((await listAll(storage, 'a/')).map((e) => e.key)).toEqual(['a/one.json']);
    expect(await storage.delete('a/one.json', { ifVersion: version })).toBe(true);
    await expect(storage.put('a/one.json', bytes, { ifVersion: version })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
  });

  it('commits a batch atomically, reads a file over 1 MB, and merges a concurrent index write', { timeout: 180_000 }, async () => {
    storage ??= make();
    const out = await storage.batch([
      { type: 'put', key: 'run/cp_001_manual.json', bytes: utf8Encode('{"n":1}'), ifAbsent: true },
      { type: 'put', key: 'run/latest.json', bytes: utf8Encode('{"n":1}') },
    ]);
    expect(out).toHaveLength(2);
    const big = new Uint8Array(1024 * 1024 + 512).fill(97);
    await storage.put('run/big.bin', big);
    expect((await storage.get('run/big.bin'))?.bytes.length).toBe(big.length);
    const other = make();
    await other.put('run/latest.json', utf8Encode('{"n":2}'));
    await storage.batch([{ type: 'put', key: 'run/latest.json', bytes: utf8Encode('{"n":3}') }]);
    expect(new TextDecoder().decode((await other.get('run/latest.json'))!.bytes)).toBe('{"n":3}');
    expect(storage.rateBudget().limit).toBeGreaterThan(0);
  });

  it('never puts the token in an error', { timeout: 60_000 }, async () => {
    const bad = githubStorage({
      owner: owner!,
      repo: `${repo!}-does-not-exist-${Date.now()}`,
      token: token!,
      ...(branch ? { branch } : {}),
    });
    const err = await bad.put('x', utf8Encode('x')).catch((e: unknown) => e);
    expect(deepStrings(err).some((s) => s.includes(token!))).toBe(false);
  });
});
