import type { StorageAdapter, StorageCapabilities } from '../../contract/storage.js';

/** A fast-check function, as far as these types need to know it. */
type FastCheckFunction = (...args: never[]) => unknown;

/**
 * The fast-check module (`import fc from 'fast-check'` or `import * as fc from 'fast-check'`), v3
 * or v4. Declared by the members the suite calls, not by importing fast-check's types, so
 * `savepoint/testing` type-checks in a project without fast-check (an optional peer).
 */
export interface StorageConformanceFastCheck {
  readonly assert: FastCheckFunction;
  readonly asyncProperty: FastCheckFunction;
  readonly array: FastCheckFunction;
  readonly constant: FastCheckFunction;
  readonly constantFrom: FastCheckFunction;
  readonly nat: FastCheckFunction;
  readonly oneof: FastCheckFunction;
  readonly record: FastCheckFunction;
  readonly uint8Array: FastCheckFunction;
}

/**
 * Options of {@link runStorageConformance}: your test runner's functions, your adapter
 * factory, and facts about your adapter that adapt the suite (never a skip list).
 */
export interface StorageConformanceOptions {
  /**
   * Label of the outer `describe` block.
   * @default 'storage adapter'
   */
  name?: string;
  /**
   * Your runner's `describe` (vitest, jest, mocha, `node:test`). Without it, tests are
   * registered flat, their names prefixed with their group.
   * @default undefined
   */
  describe?: (name: string, fn: () => void) => unknown;
  /**
   * Your runner's `it` or `test`. Each test is registered as `it(name, asyncFn)`, plus
   * `timeoutMs` as a third argument when you set it (vitest's and jest's convention).
   */
  it: (name: string, fn: () => Promise<void>, timeout?: number) => unknown;
  /** Makes a fresh, empty adapter. Called once per test (and once per property run). */
  create: () => StorageAdapter | Promise<StorageAdapter>;
  /**
   * Disposes of an adapter made by `create` (remove its directory, drop its tables).
   * Runs after every test, even a failed one; the adapter may already be closed.
   * @default adapter => adapter.close()
   */
  destroy?: (adapter: StorageAdapter) => void | Promise<void>;
  /**
   * For durable adapters: opens the same store again after `closed` was closed, like a
   * restarted process would. When given, the suite checks that data and versions survive.
   * @default undefined (not checked)
   */
  reopen?: (closed: StorageAdapter) => StorageAdapter | Promise<StorageAdapter>;
  /**
   * The capabilities you expect your adapter to declare; the suite checks the declaration
   * matches, and tests `batch()` atomicity and the size limit from what is declared.
   * @default undefined (only the declaration's consistency is checked)
   */
  capabilities?: Partial<StorageCapabilities>;
  /**
   * Whether a key and a key below it (`a` and `a/b`) can exist at once. Stores shaped like
   * file systems (fs, GitHub) cannot; savepoint's layouts never need it. When false, the
   * suite checks only that trying it fails cleanly (a CheckpointError, nothing lost).
   * @default false
   */
  nestedKeys?: boolean;
  /**
   * What the adapter's versions name. `'per-write'` (the StorageAdapter contract): every
   * write gives the key a version it never had, even when the bytes are the same, so a
   * stale version never matches again. `'content'`: a version names the bytes (GitHub blob
   * shas), so rewriting identical bytes keeps the version, and A → B → A makes A's version
   * current again; `ifVersion` then means "replace only if the content is still what I
   * read". The suite checks the semantics declared here, never both.
   * @default 'per-write'
   */
  versions?: 'per-write' | 'content';
  /**
   * How many calls race in the concurrency tests.
   * @default 8
   */
  concurrency?: number;
  /**
   * Runs of the model-based property (each on a fresh adapter); 0 turns it off.
   * @default 50
   */
  propertyRuns?: number;
  /**
   * Seed for the model-based property, to replay a failure fast-check reported.
   * @default undefined (random)
   */
  propertySeed?: number;
  /**
   * The fast-check module. When omitted, the suite imports `fast-check` itself when the
   * property test runs (an optional peer dependency of `savepoint/testing`).
   * @default undefined
   */
  fc?: StorageConformanceFastCheck;
  /**
   * Size of the large value the binary-safety test round-trips (capped by a declared
   * `maxValueBytes`).
   * @default 262144
   */
  largeValueBytes?: number;
  /**
   * Per-test timeout passed to `it`, in milliseconds.
   * @default undefined (the runner's default)
   */
  timeoutMs?: number;
}
