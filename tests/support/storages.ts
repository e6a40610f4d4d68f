/** Storage wrappers for tests: a store without `batch`, a store whose writes wait, a store that logs every put. */
import { memoryStorage, type StorageAdapter } from 'savepoint';

/** memoryStorage without `batch`: the plain sequential write path (as on fs). */
export function sequentialMemory(inner: StorageAdapter = memoryStorage()): StorageAdapter {
  return {
    name: 'memory-sequential',
    capabilities: { ...inner.capabilities, atomicBatch: false },
    get: (k) => inner.get(k),
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    close: () => inner.close(),
  };
}

/** A storage whose writes wait until `release()` (a slow store, for group commit and backpressure). */
export function gatedStorage(
  inner: StorageAdapter = memoryStorage(),
): StorageAdapter & { hold(): void; release(): void; writes: string[] } {
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  const writes: string[] = [];
  const wait = async (): Promise<void> => {
    if (gate) await gate;
  };
  return {
    name: 'gated',
    capabilities: inner.capabilities,
    writes,
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      gate = undefined;
      open?.();
    },
    get: (k) => inner.get(k),
    async put(k, b, o) {
      await wait();
      writes.push(`put ${k}`);
      return inner.put(k, b, o);
    },
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    async batch(ops) {
      await wait();
      writes.push(`batch ${ops.map((o) => o.key).join(',')}`);
      return inner.batch!(ops);
    },
    close: () => inner.close(),
  };
}

/** A storage that records every value put under each key, by put or batch (to observe that history is never rewritten). */
export function putLog(inner: StorageAdapter): StorageAdapter & { readonly puts: Map<string, Uint8Array[]> } {
  const puts = new Map<string, Uint8Array[]>();
  const seen = (key: string, bytes: Uint8Array): void => {
    puts.set(key, [...(puts.get(key) ?? []), bytes.slice()]);
  };
  return {
    ...inner,
    name: `${inner.name}-logged`,
    puts,
    get: (k) => inner.get(k),
    put: (k, b, o) => (seen(k, b), inner.put(k, b, o)),
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    close: () => inner.close(),
    ...(inner.batch
      ? {
          batch: (ops) => {
            for (const op of ops) if (op.type === 'put') seen(op.key, op.bytes);
            return inner.batch!(ops);
          },
        }
      : {}),
  };
}
