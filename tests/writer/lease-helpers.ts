import type { BatchOperation, StorageAdapter } from 'savepoint';

/** Which storage call a {@link pausableStorage} is asked to stop at. */
export type StorageCall =
  | { readonly op: 'get' | 'put' | 'delete' | 'list'; readonly key: string }
  | { readonly op: 'batch'; readonly ops: readonly BatchOperation[] };

/**
 * One writer's view of a shared store that can be frozen like a process under SIGSTOP:
 * after `pauseAt(pred)`, the first call matching `pred` (and every call after it) waits,
 * unsent, until `resume()`. What the writer does meanwhile (timers firing, promises
 * settling) happens, but nothing it sends reaches the store — as for a stopped process
 * whose in-flight request is delivered when it wakes.
 */
export function pausableStorage(inner: StorageAdapter): StorageAdapter & {
  pauseAt(pred: (call: StorageCall) => boolean): Promise<StorageCall>;
  pauseNow(): void;
  resume(): void;
  readonly paused: boolean;
} {
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  let trap: { pred: (call: StorageCall) => boolean; hit: (call: StorageCall) => void } | undefined;
  const close = (): void => {
    gate = new Promise((r) => (open = r));
  };
  const pass = async (call: StorageCall): Promise<void> => {
    if (trap?.pred(call)) {
      const t = trap;
      trap = undefined;
      close();
      t.hit(call);
    }
    while (gate) await gate;
  };
  return {
    name: `pausable-${inner.name}`,
    capabilities: inner.capabilities,
    get paused() {
      return gate !== undefined;
    },
    pauseAt(pred) {
      return new Promise((hit) => (trap = { pred, hit }));
    },
    pauseNow() {
      if (!gate) close();
    },
    resume() {
      trap = undefined;
      const o = open;
      gate = undefined;
      open = undefined;
      o?.();
    },
    async get(key) {
      await pass({ op: 'get', key });
      return inner.get(key);
    },
    async put(key, bytes, options) {
      await pass({ op: 'put', key });
      return inner.put(key, bytes, options);
    },
    async delete(key, options) {
      await pass({ op: 'delete', key });
      return inner.delete(key, options);
    },
    async *list(prefix) {
      await pass({ op: 'list', key: prefix });
      yield* inner.list(prefix);
    },
    ...(inner.batch
      ? {
          batch: async (ops: readonly BatchOperation[]) => {
            await pass({ op: 'batch', ops });
            return inner.batch!(ops);
          },
        }
      : {}),
    close: () => inner.close(),
  };
}
