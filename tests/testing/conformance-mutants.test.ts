/**
 * The conformance suite must be able to fail: each mutant below breaks one promise of the
 * StorageAdapter contract, and the suite must catch it in the tests that own that promise.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertKey, assertPrefix, sha256Hex, type LinkedRead, type ReadLinks } from 'savepoint/toolkit';
import { CheckpointError, listAll, memoryStorage, type StorageAdapter, type StorageEntry } from 'savepoint';
import { runStorageConformance, type StorageConformanceOptions } from 'savepoint/testing';

interface Registered {
  name: string;
  fn: () => Promise<void>;
}

/** Registers the suite against `create` with a collecting `it`, runs every test, returns the names of the failed ones. */
async function failuresOf(create: () => StorageAdapter, extra: Partial<StorageConformanceOptions> = {}): Promise<string[]> {
  const tests: Registered[] = [];
  runStorageConformance({ it: (name, fn) => tests.push({ name, fn }), create, fc, propertyRuns: 100, nestedKeys: true, ...extra });
  const failed: string[] = [];
  for (const t of tests) {
    if (process.env.DEBUG_MUTANTS && /random/.test(t.name)) console.log('running', t.name);
    try {
      await t.fn();
    } catch (e) {
      if (process.env.DEBUG_MUTANTS) console.log(t.name, String(e).slice(0, 200));
      failed.push(t.name);
    }
  }
  expect(tests.length).toBeGreaterThan(50);
  return failed;
}

/** memoryStorage with some methods replaced. */
function mutant(patch: (inner: StorageAdapter) => Partial<StorageAdapter>): () => StorageAdapter {
  return () => {
    const inner = memoryStorage();
    const base: StorageAdapter = {
      name: 'mutant',
      capabilities: inner.capabilities,
      get: (k) => inner.get(k),
      put: (k, b, o) => inner.put(k, b, o),
      delete: (k, o) => inner.delete(k, o),
      list: (p) => inner.list(p),
      batch: (ops) => inner.batch!(ops),
      close: () => inner.close(),
    };
    return { ...base, ...patch(inner) };
  };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

/** A correct adapter whose versions name the content (like git blob shas): for `versions: 'content'`. */
function contentStorage(): StorageAdapter {
  const cells = new Map<string, { bytes: Uint8Array; version: string }>();
  let closed = false;
  const open = (): void => {
    if (closed) throw new CheckpointError('checkpoint_closed', 'closed');
  };
  const check = (key: string, cond: { ifAbsent?: boolean; ifVersion?: string }): void => {
    const cell = cells.get(key);
    if ((cond.ifAbsent && cell) || (cond.ifVersion !== undefined && cell?.version !== cond.ifVersion))
      throw new CheckpointError('checkpoint_conflict', 'condition failed');
  };
  return {
    name: 'content',
    capabilities: { atomicBatch: false, crossProcessConditional: false },
    async get(key) {
      open();
      assertKey(key);
      const cell = cells.get(key);
      return cell && { bytes: cell.bytes.slice(), version: cell.version };
    },
    async put(key, bytes, opts = {}) {
      open();
      assertKey(key);
      const copy = bytes.slice();
      const version = await sha256Hex(copy);
      check(key, opts); // after the only await: check and write are one synchronous step
      cells.set(key, { bytes: copy, version });
      return { version };
    },
    async delete(key, opts = {}) {
      open();
      assertKey(key);
      check(key, opts);
      return cells.delete(key);
    },
    async *list(prefix) {
      open();
      assertPrefix(prefix);
      for (const key of [...cells.keys()].filter((k) => k.startsWith(prefix)).sort()) {
        const cell = cells.get(key)!;
        yield { key, version: cell.version, size: cell.bytes.length };
      }
    },
    async close() {
      closed = true;
    },
  };
}

describe('the conformance suite catches broken adapters', () => {
  it('passes the reference adapter (no false alarms)', async () => {
    expect(await failuresOf(() => memoryStorage())).toEqual([]);
  });

  it('versions that repeat for identical bytes (a content hash)', async () => {
    const failed = await failuresOf(
      mutant((inner) => ({
        async put(k, b, o) {
          const cur = await inner.get(k);
          if (o?.ifVersion !== undefined && (!cur || (await sha256Hex(cur.bytes)) !== o.ifVersion))
            throw new CheckpointError('checkpoint_conflict', 'changed');
          await inner.put(k, b, o?.ifAbsent ? o : {});
          return { version: await sha256Hex(b) };
        },
        async get(k) {
          const got = await inner.get(k);
          return got && { bytes: got.bytes, version: await sha256Hex(got.bytes) };
        },
      })),
    );
    expect(failed.join('\n')).toMatch(/version changes on every write/);
    expect(failed.join('\n')).toMatch(/never current again/);
  });

  it("content-addressed versions pass when declared (versions: 'content'), and only then", async () => {
    expect(await failuresOf(contentStorage, { versions: 'content' })).toEqual([]);
    const undeclared = (await failuresOf(contentStorage)).join('\n');
    expect(undeclared).toMatch(/version changes on every write/);
    expect(undeclared).toMatch(/never current again/);
  });

  it("per-write versions declared as versions: 'content' are caught", async () => {
    const failed = (await failuresOf(() => memoryStorage(), { versions: 'content' })).join('\n');
    expect(failed).toMatch(/version changes on every write/);
  });

  it('versionsPerWrite declared by a store whose versions name the content is caught', async () => {
    const declaring = (): StorageAdapter => {
      const inner = contentStorage();
      return { ...inner, capabilities: { ...inner.capabilities, versionsPerWrite: true } };
    };
    const failed = (await failuresOf(declaring, { versions: 'content' })).filter((name) => /versions per write/.test(name));
    expect(failed).toHaveLength(2);
  });

  it('a listing in insertion order', async () => {
    const failed = await failuresOf(
      mutant((inner) => {
        const order: string[] = [];
        return {
          async put(k, b, o) {
            const r = await inner.put(k, b, o);
            if (!order.includes(k)) order.push(k);
            return r;
          },
          async *list(p): AsyncIterable<StorageEntry> {
            const all = new Map<string, StorageEntry>();
            for await (const e of inner.list(p)) all.set(e.key, e);
            for (const k of order) if (all.has(k)) yield all.get(k)!;
          },
        };
      }),
    );
    expect(failed.join('\n')).toMatch(/ascending code-unit order/);
  });

  it('a prefix treated as a directory', async () => {
    const failed = await failuresOf(
      mutant((inner) => ({
        async *list(p): AsyncIterable<StorageEntry> {
          const dir = p === '' || p.endsWith('/') ? p : `${p}/`;
          for await (const e of inner.list(dir)) yield e;
        },
      })),
    );
    expect(failed.join('\n')).toMatch(/exactly the keys that start with the prefix/);
  });

  it('get returning the stored buffer itself', async () => {
    const failed = await failuresOf(
      mutant((inner) => {
        const cache = new Map<string, { bytes: Uint8Array; version: string }>();
        return {
          async get(k) {
            const got = await inner.get(k);
            if (!got) return undefined;
            const hit = cache.get(k);
            if (hit?.version === got.version) return hit;
            cache.set(k, got);
            return got;
          },
        };
      }),
    );
    expect(failed.join('\n')).toMatch(/private copy/);
  });

  it('check-then-write conditional puts (a race window)', async () => {
    const failed = await failuresOf(
      mutant((inner) => ({
        async put(k, b, o) {
          const cur = await inner.get(k);
          if (o?.ifAbsent && cur) throw new CheckpointError('checkpoint_conflict', 'exists');
          if (o?.ifVersion !== undefined && cur?.version !== o.ifVersion) throw new CheckpointError('checkpoint_conflict', 'changed');
          await tick();
          return inner.put(k, b);
        },
      })),
    );
    expect(failed.join('\n')).toMatch(/exactly one of N racing create-only puts wins/);
    expect(failed.join('\n')).toMatch(/exactly one of N racing replace-if-version puts wins/);
  });

  it('a stale version accepted while the key exists', async () => {
    const failed = await failuresOf(
      mutant((inner) => ({
        async put(k, b, o) {
          if (o?.ifVersion !== undefined && (await inner.get(k))) return inner.put(k, b);
          return inner.put(k, b, o);
        },
      })),
    );
    expect(failed.join('\n')).toMatch(/stale or unknown version/);
    expect(failed.join('\n')).toMatch(/random operation sequences match a reference model/);
  });

  it('keys not validated on get, and an error that is not a CheckpointError', async () => {
    const failed = await failuresOf(
      mutant((inner) => ({
        async get(k) {
          if (typeof k !== 'string') throw new TypeError('bad key');
          return k.includes('..') ? undefined : inner.get(k);
        },
      })),
    );
    expect(failed.join('\n')).toMatch(/refuses a key that is "\.\." segment/);
    expect(failed.join('\n')).toMatch(/refuses a key that is not a string/);
  });

  it('an adapter that ignores close()', async () => {
    const failed = await failuresOf(mutant(() => ({ close: async () => undefined })));
    expect(failed.join('\n')).toMatch(/every later call rejects with checkpoint_closed/);
  });

  it('a non-atomic batch, and capabilities that do not match the expectation', async () => {
    const failed = await failuresOf(
      mutant((inner) => ({
        async batch(ops) {
          const out = [];
          for (const op of ops) {
            if (op.type === 'put')
              out.push({ type: 'put' as const, key: op.key, version: (await inner.put(op.key, op.bytes, op)).version });
            else out.push({ type: 'delete' as const, key: op.key, existed: await inner.delete(op.key, op) });
          }
          return out;
        },
      })),
      { capabilities: { crossProcessConditional: true } },
    );
    expect(failed.join('\n')).toMatch(/condition fails applies nothing/);
    expect(failed.join('\n')).toMatch(/declares its name and capabilities consistently/);
  });

  it('a linked read that answers an absent value with keys other than the listing, or as absent when not asked', async () => {
    const failed = await failuresOf(
      mutant((inner) => {
        const linked: Pick<LinkedRead, 'getLinked'> = {
          async getLinked(key: string, links: ReadLinks) {
            const value = await inner.get(key);
            if (value) return { value };
            // Wrong twice: absent whether asked or not, and nothing listed under the prefix.
            return { absent: { prefix: links.keysIfAbsent ?? key, keys: [] } };
          },
        };
        return { capabilities: { ...inner.capabilities, linkedRead: true }, ...linked } as Partial<StorageAdapter>;
      }),
    );
    expect(failed.join('\n')).toMatch(/readLinked with keysIfAbsent/);
    expect(failed.join('\n')).toMatch(/getLinked, when declared/);
  });

  it("a linked read whose parts under given prefixes are not the listing's (an entry's size left at 0, one key too many)", async () => {
    const failed = await failuresOf(
      mutant((inner) => {
        const linked: Pick<LinkedRead, 'getLinked'> = {
          async getLinked(key: string, links: ReadLinks) {
            const value = await inner.get(key);
            if (!value) return undefined;
            const listed = links.entries === undefined ? [] : await listAll(inner, links.entries);
            return {
              value,
              ...(links.entries === undefined
                ? {}
                : { entries: { prefix: links.entries, entries: listed.map((e) => ({ ...e, size: 0 })) } }),
              ...(links.keys === undefined
                ? {}
                : { keys: { prefix: links.keys, keys: [...(await listAll(inner, links.keys)).map((e) => e.key), 'zz'] } }),
            };
          },
        };
        return { capabilities: { ...inner.capabilities, linkedRead: true }, ...linked } as Partial<StorageAdapter>;
      }),
    );
    expect(failed.join('\n')).toMatch(/readLinked under given prefixes/);
  });

  it('an adapter that loses a write silently (the model catches it)', async () => {
    const failed = await failuresOf(
      mutant((inner) => {
        let n = 0;
        return {
          async put(k, b, o) {
            const r = await inner.put(k, b, o);
            // Every 7th write is dropped after being acknowledged.
            if (++n % 7 === 0) await inner.delete(k);
            return r;
          },
        };
      }),
    );
    expect(failed.join('\n')).toMatch(/random operation sequences match a reference model/);
  });
});
