import { CheckpointError } from '../../contract/errors.js';
import type { Dir, RootDir } from './dir.js';
import { fdClose } from './fd.js';
import { scrubber, type Scrub } from './io.js';
import type { Journal } from './journal/index.js';
import type { FsSettings } from './options.js';
import type { FsOpenReport } from './lifecycle.js';

/** Everything one fsStorage instance keeps between calls. */
export interface FsStoreState {
  /** The checked options, defaults filled in. */
  readonly settings: FsSettings;
  /** The journal every write goes through (`journal: true`), once the store is open; undefined again once closed. */
  journal: Journal | undefined;
  /** The first open, started by `ready()` or the first operation; every later call shares it. */
  opening: Promise<FsOpenReport> | undefined;
  /** The root directory's descriptor while the store is open (undefined before the open ends and once it is closed). */
  root: RootDir | undefined;
  /** `close()` was called: every new call is refused with `checkpoint_closed`. */
  closed: boolean;
  /** Calls in flight: `close()` waits for them, and the root stays open while any runs. */
  readonly inflight: Set<Promise<unknown>>;
  /** In-process queue per key, so writers of one process line up instead of polling the lock file. */
  readonly queues: Map<string, Promise<void>>;
  /** Listings not finished yet: a listing is not an awaited call close() can wait for, so the root stays open until the last ends. */
  listings: number;
}

/** The state of a store not opened yet. */
export function newStoreState(settings: FsSettings): FsStoreState {
  return {
    settings,
    journal: undefined,
    opening: undefined,
    root: undefined,
    closed: false,
    inflight: new Set(),
    queues: new Map(),
    listings: 0,
  };
}

/** The refusal of a call to an fsStorage that was closed (whatever its layout). */
export const fsClosed = (): CheckpointError => new CheckpointError('checkpoint_closed', 'fs storage is closed');

export function assertOpen(state: FsStoreState): void {
  if (state.closed) throw fsClosed();
}

/** Refuses a put's value that is not bytes (before any layout or file is touched). */
export function assertValueBytes(key: string, bytes: unknown): asserts bytes is Uint8Array {
  if (!(bytes instanceof Uint8Array))
    throw new CheckpointError('checkpoint_schema_invalid', `value of ${key} is not a Uint8Array`, { details: { key } });
}

/** Counts `promise` among the calls in flight until it settles. */
export function track<T>(state: FsStoreState, promise: Promise<T>): Promise<T> {
  state.inflight.add(promise);
  const done = (): void => void state.inflight.delete(promise);
  promise.then(done, done);
  return promise;
}

/** Closes the root's descriptor once nothing can use it any more (names through it would reach whatever reuses the number). */
export async function closeRoot(state: FsStoreState): Promise<void> {
  if (state.listings > 0 || state.inflight.size > 0 || !state.root) return;
  const fd = state.root.fd;
  state.root = undefined;
  await fdClose(fd).catch(() => undefined);
}

/** Rewrites the store's paths (the root's and those of `dirs`) out of an error's message. */
export function scrubFor(state: FsStoreState, dirs: readonly Dir[]): Scrub {
  const root = state.root;
  return scrubber(root?.real, root ? [root, ...dirs] : dirs);
}
