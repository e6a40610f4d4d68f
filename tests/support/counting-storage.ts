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
