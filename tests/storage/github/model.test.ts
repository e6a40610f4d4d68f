import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isCheckpointError, listAll, type BatchOperation } from 'savepoint';
import { gitBlobSha, githubStorage } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { TOKEN, virtualClock } from '../../support/github.js';

// Random operation sequences against a reference model in which a version is the git
// blob sha of the content (githubStorage's documented version semantics): values,
// versions, conflicts and listings must all agree.
const clock = virtualClock();
let gh: GitHubEmulator;
let n = 0;
beforeAll(async () => {
  gh = await startGitHubEmulator({ token: TOKEN, clock, logBodies: false, secondaryLimit: false });
});
afterAll(async () => {
  await gh.close();
});

const keys = ['a', 'b/c', 'b/d', 'e/f/g'];
const values = ['', 'x', 'y', '{"n":1}'];
type Cond = 'none' | 'absent' | 'current' | 'stale';
type Op =
  | { op: 'put'; key: string; value: string; cond: Cond }
  | { op: 'delete'; key: string; cond: Exclude<Cond, 'absent'> }
  | { op: 'get'; key: string }
  | { op: 'list'; prefix: string }
  | { op: 'batch'; items: { key: string; value: string | null; cond: Cond }[] };

const key = fc.constantFrom(...keys);
const value = fc.constantFrom(...values);
const cond = fc.constantFrom<Cond>('none', 'absent', 'current', 'stale');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), key, value, cond }),
  fc.record({ op: fc.constant('delete' as const), key, cond: fc.constantFrom<'none' | 'current' | 'stale'>('none', 'current', 'stale') }),
  fc.record({ op: fc.constant('get' as const), key }),
  fc.record({ op: fc.constant('list' as const), prefix: fc.constantFrom('', 'b/', 'b', 'e/f/') }),
  fc.record({
    op: fc.constant('batch' as const),
    items: fc.uniqueArray(fc.record({ key, value: fc.option(value, { nil: null }), cond }), {
      minLength: 1,
      maxLength: 3,
      selector: (i) => i.key,
    }),
  }),
);

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

it('random operation sequences match a content-addressed model', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 12 }), async (ops) => {
      const s = githubStorage({
        owner: gh.owner,
        repo: gh.repo,
        token: TOKEN,
        baseUrl: gh.url,
        clock,
        basePath: `model/${++n}`,
        emergencyQueue: 'memory',
        serializeWrites: 'adapter',
      });
      const model = new Map<string, string>();
      const version = (v: string): Promise<string> => gitBlobSha(enc(v));
      const staleFor = async (k: string): Promise<string> => {
        // A version of content the key does not hold now.
        const other = values.find((v) => v !== model.get(k)) ?? 'zzz';
        return version(other);
      };
      const conditionOf = async (k: string, c: Cond): Promise<{ opts: { ifAbsent?: boolean; ifVersion?: string }; ok: boolean }> => {
        const cur = model.get(k);
        if (c === 'absent') return { opts: { ifAbsent: true }, ok: cur === undefined };
        if (c === 'current')
          return cur === undefined
            ? { opts: { ifVersion: await staleFor(k) }, ok: false }
            : { opts: { ifVersion: await version(cur) }, ok: true };
        if (c === 'stale') return { opts: { ifVersion: await staleFor(k) }, ok: false };
        return { opts: {}, ok: true };
      };
      for (const o of ops) {
        if (o.op === 'get') {
          const got = await s.get(o.key);
          const cur = model.get(o.key);
          expect(got === undefined ? undefined : { text: new TextDecoder().decode(got.bytes), version: got.version }).toEqual(
            cur === undefined ? undefined : { text: cur, version: await version(cur) },
          );
        } else if (o.op === 'list') {
          const expected = await Promise.all(
            [...model.entries()]
              .filter(([k]) => k.startsWith(o.prefix))
              .sort(([x], [y]) => (x < y ? -1 : 1))
              .map(async ([k, v]) => ({ key: k, version: await version(v), size: enc(v).length })),
          );
          expect(await listAll(s, o.prefix)).toEqual(expected);
        } else if (o.op === 'put') {
          const { opts, ok } = await conditionOf(o.key, o.cond);
          if (!ok) {
            await expect(s.put(o.key, enc(o.value), opts)).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
            continue;
          }
          expect((await s.put(o.key, enc(o.value), opts)).version).toBe(await version(o.value));
          model.set(o.key, o.value);
        } else if (o.op === 'delete') {
          const { opts, ok } = await conditionOf(o.key, o.cond);
          if (!ok) {
            await expect(s.delete(o.key, opts)).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
            continue;
          }
          expect(await s.delete(o.key, opts)).toBe(model.has(o.key));
          model.delete(o.key);
        } else {
          const batch: BatchOperation[] = [];
          let allOk = true;
          for (const item of o.items) {
            const c = item.value === null && item.cond === 'absent' ? 'none' : item.cond;
            const { opts, ok } = await conditionOf(item.key, c);
            allOk &&= ok;
            batch.push(
              item.value === null
                ? { type: 'delete', key: item.key, ...(opts.ifVersion ? { ifVersion: opts.ifVersion } : {}) }
                : { type: 'put', key: item.key, bytes: enc(item.value), ...opts },
            );
          }
          const result = await s.batch(batch).catch((err: unknown) => err);
          if (!allOk) {
            expect(isCheckpointError(result, 'checkpoint_conflict')).toBe(true);
            continue;
          }
          expect(Array.isArray(result)).toBe(true);
          for (const item of o.items) {
            if (item.value === null) model.delete(item.key);
            else model.set(item.key, item.value);
          }
        }
      }
      const final = await listAll(s, '');
      expect(final.map((e) => e.key)).toEqual([...model.keys()].sort());
    }),
    { numRuns: 25 },
  );
});
