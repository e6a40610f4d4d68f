import { decodeEnvelope, looksChunked } from '../codec/chunking.js';
import type { StorageAdapter, StoredObject } from '../contract/storage.js';

/*
 * A saver reads the same documents again and again: every turn of a graph reads its newest
 * checkpoint, and a `DeltaChannel` walks back through the same ancestors and their writes
 * turn after turn. Decoding one (schema, seal, JSON; for a chunked document, its chunks
 * reassembled) costs far more than reading its stored bytes. So the saver keeps, per key, the
 * value it decoded with the exact bytes it was decoded from; a read still reads the key every
 * time, and answers the kept value only when the stored bytes are the same, byte for byte —
 * a document replaced, damaged or deleted since is read afresh (or found missing), as without
 * the cache. An envelope names its chunks by their content, so the same envelope stands for
 * the same (verified) document.
 *
 * A document the saver wrote itself is kept as it sealed it, by the version the store gave its
 * key (see {@link keepWritten}): the next turn reads it back, and a store's versions change with
 * every write or name the content (the storage contract, which conditional writes rest on), so
 * a read finding that version finds those very bytes. Its chunks are then not read back: what is
 * answered is what the saver sealed and the store acknowledged.
 */

/** Stored values larger than this are not kept (compared byte for byte on every read): checkpoint envelopes and small documents are. */
const KEPT_STORED_MAX_BYTES = 64 * 1024;

/** What one cached value cost to keep, about: its stored bytes, or the document an envelope stands for. */
function costOf(key: string, stored: Uint8Array): number {
  if (!looksChunked(stored)) return 2 * stored.length;
  try {
    return 2 * (decodeEnvelope(stored, key)?.bytes ?? stored.length);
  } catch {
    return 2 * stored.length;
  }
}

interface Entry<T> {
  /** The stored bytes `value` was decoded from; undefined for a value kept by its version (see {@link keepWritten}). */
  readonly stored: Uint8Array | undefined;
  /** The version the store gave the key when the saver wrote `value` (with `stored` undefined). */
  readonly version?: string;
  /** The value; undefined until a read first asks for a value kept by its version (`make` makes it then). */
  value: T | undefined;
  /** Dropped once it ran: what it holds (the members sealed) is then the value's. */
  make?: (() => T) | undefined;
  readonly cost: number;
}

/** Decoded values by key, in use order (oldest first), {@link DecodedCache.maxCost} at most in all (see {@link keep}). */
export interface DecodedCache<T> {
  readonly entries: Map<string, Entry<T>>;
  readonly maxCost: number;
  cost: number;
}

export function createDecodedCache<T>(maxCost: number): DecodedCache<T> {
  return { entries: new Map(), maxCost, cost: 0 };
}

/** Byte-for-byte equality, compared natively (a loop in JS runs interpreted in a read made a few times: tens of µs for a small document). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

function drop<T>(cache: DecodedCache<T>, key: string): void {
  const entry = cache.entries.get(key);
  if (!entry) return;
  cache.entries.delete(key);
  cache.cost -= entry.cost;
}

/**
 * The value kept for `key` when it was decoded from the same bytes as `stored` (just read), else
 * undefined: {@link decodeCached}'s answer without a promise, for readers of many documents at
 * once that decode only what is not kept.
 */
export function keptValue<T>(cache: DecodedCache<T>, key: string, stored: StoredObject): T | undefined {
  const entry = cache.entries.get(key);
  if (!entry || !(entry.stored ? sameBytes(entry.stored, stored.bytes) : entry.version === stored.version)) return undefined;
  cache.entries.delete(key);
  cache.entries.set(key, entry);
  if (entry.value === undefined) {
    entry.value = entry.make!();
    entry.make = undefined;
  }
  return entry.value;
}

/** The value `stored` (just read from `key`) decodes to: the kept one when it came from the same bytes, else `decode`'s, kept. */
export async function decodeCached<T>(
  cache: DecodedCache<T>,
  key: string,
  stored: StoredObject | undefined,
  decode: (bytes: Uint8Array) => Promise<T>,
): Promise<T | undefined> {
  if (!stored) {
    drop(cache, key);
    return undefined;
  }
  const kept = keptValue(cache, key, stored);
  if (kept !== undefined) return kept;
  drop(cache, key);
  const value = await decode(stored.bytes);
  if (stored.bytes.length > KEPT_STORED_MAX_BYTES) return value;
  const cost = costOf(key, stored.bytes);
  if (cost > cache.maxCost / 4) return value;
  // A store may hand out a buffer it holds (a synchronous store's value): keep a copy.
  keep(cache, key, { stored: stored.bytes.slice(), value, cost });
  return value;
}

/**
 * Over budget, the oldest entries leave until a quarter of the budget is free: a walk of the map
 * from its start passes every entry deleted since the map last compacted itself (V8 leaves them
 * in place), thousands once a saver's puts keep it full, so it is taken once per many keeps, not
 * on every one.
 */
const KEPT_AFTER_EVICTION = 3 / 4;

function keep<T>(cache: DecodedCache<T>, key: string, entry: Entry<T>): void {
  cache.entries.set(key, entry);
  cache.cost += entry.cost;
  if (cache.cost <= cache.maxCost) return;
  const target = cache.maxCost * KEPT_AFTER_EVICTION;
  for (const [old, e] of cache.entries) {
    if (cache.cost <= target) break;
    cache.entries.delete(old);
    cache.cost -= e.cost;
  }
}

/**
 * Keeps the value `make` gives, which the caller just wrote under `key` as a document of `size`
 * bytes (before any chunking) and the store acknowledged at `version`: a read of `key` finding
 * that version answers it without decoding (see the comment at the top). `make` runs at the first
 * such read, if any: a document written is usually not read back by its writer.
 */
export function keepWritten<T>(cache: DecodedCache<T>, key: string, version: string, make: () => T, size: number): void {
  drop(cache, key);
  const cost = 2 * size;
  if (cost <= cache.maxCost / 4) keep(cache, key, { stored: undefined, version, value: undefined, make, cost });
}

/** Reads `key` and decodes it through `cache` (see {@link decodeCached}). */
export async function readCached<T>(
  cache: DecodedCache<T>,
  storage: StorageAdapter,
  key: string,
  read: (storage: StorageAdapter, key: string) => Promise<StoredObject | undefined>,
  decode: (bytes: Uint8Array) => Promise<T>,
): Promise<T | undefined> {
  return decodeCached(cache, key, await read(storage, key), decode);
}
