import type { StorageAdapter } from 'savepoint';

const decoder = new TextDecoder();

/** Every key of `store` with its value (as UTF-8 text) and version, read through `list` and `get`. */
export async function storeContents(store: StorageAdapter): Promise<Map<string, { value: string; version: string }>> {
  const out = new Map<string, { value: string; version: string }>();
  for await (const entry of store.list('')) {
    const got = await store.get(entry.key);
    out.set(entry.key, { value: decoder.decode(got!.bytes), version: got!.version });
  }
  return out;
}
