import type { StorageAdapter } from '../../contract/storage.js';
import type { StorageConformanceOptions } from './options.js';

/** What each group of conformance tests gets: the options, and helpers to register tests. */
export interface SuiteContext {
  readonly options: StorageConformanceOptions;
  readonly concurrency: number;
  readonly nestedKeys: boolean;
  /** Versions name the content (`versions: 'content'`) rather than the write. */
  readonly contentVersions: boolean;
  /** Registers a group of tests. */
  group(name: string, body: () => void): void;
  /** Registers a test that gets a fresh adapter, disposed of afterwards. */
  test(name: string, body: (adapter: StorageAdapter) => Promise<void>): void;
  /** Registers a test that manages adapters itself (through {@link SuiteContext.withAdapter}). */
  testRaw(name: string, body: () => Promise<void>): void;
  /** Runs `body` on a fresh adapter and disposes of it, even on failure. */
  withAdapter<T>(body: (adapter: StorageAdapter) => Promise<T>): Promise<T>;
}

export function createContext(options: StorageConformanceOptions): SuiteContext {
  const prefixes: string[] = [];
  const destroy = async (adapter: StorageAdapter): Promise<void> => {
    if (options.destroy) await options.destroy(adapter);
    else await adapter.close();
  };
  const register = (name: string, fn: () => Promise<void>): void => {
    const full = options.describe ? name : [...prefixes, name].join(' › ');
    if (options.timeoutMs !== undefined) options.it(full, fn, options.timeoutMs);
    else options.it(full, fn);
  };
  const ctx: SuiteContext = {
    options,
    concurrency: Math.max(2, Math.floor(options.concurrency ?? 8)),
    nestedKeys: options.nestedKeys ?? false,
    contentVersions: options.versions === 'content',
    group(name, body) {
      if (options.describe) {
        options.describe(name, body);
        return;
      }
      prefixes.push(name);
      try {
        body();
      } finally {
        prefixes.pop();
      }
    },
    async withAdapter(body) {
      const adapter = await options.create();
      try {
        return await body(adapter);
      } finally {
        await destroy(adapter);
      }
    },
    test(name, body) {
      register(name, () => ctx.withAdapter(body));
    },
    testRaw(name, body) {
      register(name, body);
    },
  };
  return ctx;
}
