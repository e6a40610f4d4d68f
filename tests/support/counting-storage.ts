import type { LinkedRead, ReadLinks } from '../../src/contract/linked-read.js';
import type { StorageAdapter } from '../../src/contract/storage.js';

/**
 * `inner` with its writing calls recorded in `calls`: `put`, `delete`, and `batch:<n>` for a
 * batch holding n deletes — to check how many storage round trips (and which) an operation makes —
 * and its listings, as `list:<prefix>`.
 */
export function countingStorage(inner: StorageAdapter): { readonly storage: StorageAdapter; readonly calls: string[] } {
  const calls: string[] = [];
  const storage: StorageAdapter = {
    ...inner,
    name: 'counting',
    capabilities: inner.capabilities,
    get: (k) => inner.get(k),
    list: (p) => (calls.push(`list:${p}`), inner.list(p)),
    put: (k, b, o) => (calls.push('put'), inner.put(k, b, o)),
    delete: (k, o) => (calls.push('delete'), inner.delete(k, o)),
    batch: (ops) => (calls.push(`batch:${ops.filter((op) => op.type === 'delete').length}`), inner.batch!(ops)),
  };
  return { storage, calls };
}

/**
 * `storage` with its gets and listings counted; every other member (its linked read among them)
 * is the store's own, uncounted.
 */
export function countingReads(storage: StorageAdapter): { readonly store: StorageAdapter; readonly reads: () => number } {
  let reads = 0;
  const store: StorageAdapter = Object.assign(Object.create(storage) as StorageAdapter, {
    get: (key: string, options?: Parameters<StorageAdapter['get']>[1]) => {
      reads++;
      return storage.get(key, options);
    },
    list: (prefix: string) => {
      reads++;
      return storage.list(prefix);
    },
  });
  return { store, reads: () => reads };
}

/** `storage` with the links of each linked read recorded in `asked`; every other member is the store's own. */
export function askedLinks<S extends StorageAdapter>(storage: S): { readonly store: S; readonly asked: ReadLinks[] } {
  const asked: ReadLinks[] = [];
  const getLinked = (storage as S & LinkedRead).getLinked.bind(storage);
  const store = Object.assign(Object.create(storage) as S, {
    getLinked: (key: string, links: ReadLinks) => {
      asked.push(links);
      return getLinked(key, links);
    },
  });
  return { store, asked };
}
