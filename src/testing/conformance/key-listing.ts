import { listKeysOf, ownListKeysOf, type StorageAdapter } from '../../contract/storage.js';
import { equal } from './check.js';
import { EDGE_KEYS } from './keys.js';
import type { SuiteContext } from './context.js';

/** The prefixes a key listing is compared at: the whole store, directories, parts of names, a key itself, none. */
const PREFIXES = ['', 'kl/', 'kl/a', 'kl/a/', 'kl/a/b', 'kl/a/bb', 'kl/b/deep/er/', 'kl/gone', 'kl/none/', 'zz'];

/** Keys at several depths, some replaced and some deleted (on a journaled store, some not yet applied when listed). */
async function fill(adapter: StorageAdapter): Promise<void> {
  const put = (key: string, text: string): Promise<unknown> => adapter.put(key, new TextEncoder().encode(text));
  for (const key of ['kl/a/b', 'kl/a/bb/c', 'kl/a/bc', 'kl/ab', 'kl/b/deep/er/x', 'kl/gone', 'kl/gone2', 'zz']) await put(key, key);
  await put('kl/a/b', 'again');
  await adapter.delete('kl/gone');
  for (const key of EDGE_KEYS) await put(key, `value of ${key}`);
}

/** The keys `list(prefix)` yields, in its order. */
export async function listedKeys(adapter: StorageAdapter, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of adapter.list(prefix)) keys.push(entry.key);
  return keys;
}

/** The keys `listKeysOf(prefix)` yields, in its order. */
async function namedKeys(adapter: StorageAdapter, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of listKeysOf(adapter, prefix)) keys.push(key);
  return keys;
}

/** The optional listing by name (`listKeys`, contract/storage.ts), checked on stores that have it; `listKeysOf` on every store. */
export function keyListingTests(ctx: SuiteContext): void {
  ctx.group('key listing', () => {
    ctx.test('key listing: listKeys (or listKeysOf, without it) yields exactly the keys list yields, in its order', async (adapter) => {
      await fill(adapter);
      const own = ownListKeysOf(adapter) !== undefined ? 'listKeys' : 'listKeysOf';
      for (const prefix of [...PREFIXES, ...EDGE_KEYS])
        equal(
          JSON.stringify(await namedKeys(adapter, prefix)),
          JSON.stringify(await listedKeys(adapter, prefix)),
          `${own}(${JSON.stringify(prefix)}) against list`,
        );
    });
  });
}
