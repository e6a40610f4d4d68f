/**
 * The packed store's reads beyond `get`: the linked read (contract/linked-read.ts), the
 * multi-get and the listing by name. They answer from the index in memory and `pread`s of the values, with no
 * file-system metadata call: a LangGraph thread's head, the checkpoint it names and that
 * checkpoint's writes are index lookups and one `pread` each, in one synchronous pass (nothing
 * of this process changes the index between them; the index changes only once a group's write
 * returned, so every entry read names durable, never overwritten bytes).
 */
import { pointerOf, type AbsentLinked, type LinkedValues, type ListedObject, type ReadLinks } from '../../contract/linked-read.js';
import { readTooLarge } from '../../contract/read-limit.js';
import type { StorageEntry, StoredObject } from '../../contract/storage.js';
import { isKey, isPrefix } from '../keys.js';
import { linkedName } from '../fs/linked-read.js';

/** What the reads need of the open store: its index (entries of any shape), its keys in order and a read of a value. */
export interface PackedReads<Entry> {
  /** The entry of `key`'s current value in the index. */
  entryOf(key: string): Entry | undefined;
  /** The value's length in bytes. */
  lengthOf(entry: Entry): number;
  /** The value's version. */
  versionOf(entry: Entry): string;
  /** The value `entry` names, read now (`pread` on the event loop), into a buffer of its own. */
  readNow(entry: Entry): Uint8Array;
  /** Where `entry`'s value lies: its file (an opaque handle) and offset. */
  placeOf(entry: Entry): { readonly file: unknown; readonly offset: number };
  /** `into.length` bytes of `file` from `offset`, read now into `into`. */
  readSpanNow(file: unknown, into: Uint8Array, offset: number): void;
  /** The keys under `prefix`, in listing order (a copy). */
  keysUnder(prefix: string): readonly string[];
  /** The largest value a read takes, and whose limit that is. */
  readonly limit: { readonly bytes: number; readonly whose: string };
}

/** Pointers parsed lately, by key, each with the version it was parsed from: a version is never reused, so the same version is the same bytes. */
interface KeptPointer {
  readonly version: string;
  readonly pointer: Pointer;
}
type Pointer = ReturnType<typeof pointerOf>;

/** Heads whose parse is kept per store (a thread's head read at each `getTuple`). */
const POINTERS_KEPT = 256;

/** Refuses links that cannot name a valid key (`x` stands for any member text, as fsStorage's linked read does). */
function objectAt<Entry>(reads: PackedReads<Entry>, key: string, entry: Entry, limit = reads.limit): StoredObject {
  const length = reads.lengthOf(entry);
  if (length > limit.bytes) throw readTooLarge(key, length, limit.bytes, limit.whose);
  return { bytes: reads.readNow(entry), version: reads.versionOf(entry) };
}

/** A linked read over one packed store: `getLinked` of the contract, keeping the parse of the pointers it read lately. */
export function packedLinkedRead<Entry>(
  reads: PackedReads<Entry>,
): (key: string, links: ReadLinks) => LinkedValues | AbsentLinked | undefined {
  const kept = new Map<string, KeptPointer>();
  const pointerAt = (key: string, value: StoredObject): Pointer => {
    const entry = kept.get(key);
    kept.delete(key);
    const pointer = entry?.version === value.version ? entry.pointer : pointerOf(value.bytes);
    kept.set(key, { version: value.version, pointer });
    if (kept.size > POINTERS_KEPT) kept.delete(kept.keys().next().value!);
    return pointer;
  };
  // The arguments are checked by the caller, before it brings the index up to date (assertLinkedReadArguments).
  return (key, links) => {
    const entry = reads.entryOf(key);
    if (entry === undefined) {
      const prefix = links.keysIfAbsent;
      return prefix === undefined ? undefined : { absent: { prefix, keys: reads.keysUnder(prefix) } };
    }
    const value = objectAt(reads, key, entry);
    const pointer = links.get || links.list ? pointerAt(key, value) : undefined;
    const getKey = links.get && linkedName(pointer, links.get, isKey);
    const prefix = links.list && linkedName(pointer, links.list, isPrefix);
    const gotEntry = getKey === undefined ? undefined : reads.entryOf(getKey);
    return {
      value,
      ...(getKey === undefined
        ? {}
        : { got: { key: getKey, object: gotEntry === undefined ? undefined : objectAt(reads, getKey, gotEntry) } }),
      ...(prefix === undefined ? {} : { listed: { prefix, objects: listedUnder(reads, prefix) } }),
      // `keys` and `first` are left to the caller: a pruning saver asks for both where a store reads
      // them in its one round trip, and here listing after costs no round trip either.
      ...(links.entries === undefined ? {} : { entries: { prefix: links.entries, entries: entriesUnder(reads, links.entries) } }),
    };
  };
}

/** What `list(prefix)` yields: each key under `prefix` with its version and size, in listing order. */
function entriesUnder<Entry>(reads: PackedReads<Entry>, prefix: string): StorageEntry[] {
  const entries: StorageEntry[] = [];
  for (const key of reads.keysUnder(prefix)) {
    const entry = reads.entryOf(key);
    if (entry !== undefined) entries.push({ key, version: reads.versionOf(entry), size: reads.lengthOf(entry) });
  }
  return entries;
}

/** Every key under `prefix` with its value, in listing order. */
function listedUnder<Entry>(reads: PackedReads<Entry>, prefix: string): ListedObject[] {
  const objects: ListedObject[] = [];
  for (const key of reads.keysUnder(prefix)) {
    const entry = reads.entryOf(key);
    if (entry !== undefined) objects.push({ key, ...objectAt(reads, key, entry) });
  }
  return objects;
}

/** Values closer than this in one file are read by one `pread` with the bytes between them (record headers, keys). */
const SPAN_GAP_BYTES = 4096;
/** The largest span one `pread` takes. */
const SPAN_MAX_BYTES = 1 << 20;

interface Wanted {
  readonly index: number;
  readonly version: string;
  readonly file: unknown;
  readonly offset: number;
  readonly length: number;
}

/**
 * `getMany(keys)` in one synchronous pass: each key's entry looked up, and the values read by
 * `pread`, values lying close together in one file (written in one group, or one after another)
 * by one `pread` of their span; answered by one promise instead of one a key (`keys` checked by
 * the caller). Each value is copied into a buffer of its own: the caller may keep `bytes.buffer`.
 */
export function packedValuesNow<Entry>(
  reads: PackedReads<Entry>,
  keys: readonly string[],
  limit: PackedReads<Entry>['limit'],
): (StoredObject | undefined)[] {
  const out = new Array<StoredObject | undefined>(keys.length).fill(undefined);
  const wanted: Wanted[] = [];
  keys.forEach((key, index) => {
    const entry = reads.entryOf(key);
    if (entry === undefined) return;
    const length = reads.lengthOf(entry);
    if (length > limit.bytes) throw readTooLarge(key, length, limit.bytes, limit.whose);
    const place = reads.placeOf(entry);
    wanted.push({ index, version: reads.versionOf(entry), length, file: place.file, offset: place.offset });
  });
  // Grouped by file (in the order first met), by offset within one.
  const files = new Map<unknown, number>();
  for (const w of wanted) if (!files.has(w.file)) files.set(w.file, files.size);
  wanted.sort((a, b) => files.get(a.file)! - files.get(b.file)! || a.offset - b.offset);
  for (let first = 0; first < wanted.length;) {
    const file = wanted[first]!.file;
    const start = wanted[first]!.offset;
    let end = start + wanted[first]!.length;
    let last = first;
    for (; last + 1 < wanted.length; last++) {
      const next = wanted[last + 1]!;
      const nextEnd = Math.max(end, next.offset + next.length);
      if (next.file !== file || next.offset - end > SPAN_GAP_BYTES || nextEnd - start > SPAN_MAX_BYTES) break;
      end = nextEnd;
    }
    const span = new Uint8Array(end - start);
    reads.readSpanNow(file, span, start);
    // A span of one value is that value's own buffer.
    if (first === last) out[wanted[first]!.index] = { bytes: span, version: wanted[first]!.version };
    else
      for (let i = first; i <= last; i++) {
        const w = wanted[i]!;
        out[w.index] = { bytes: span.slice(w.offset - start, w.offset - start + w.length), version: w.version };
      }
    first = last + 1;
  }
  return out;
}

/** `listKeys(prefix)`: the keys `list(prefix)` yields, in its order, without their versions. */
/** The keys under `prefix` (checked by the caller), in order. */
export async function* packedKeyNames<Entry>(reads: PackedReads<Entry>, prefix: string): AsyncGenerator<string> {
  for (const key of reads.keysUnder(prefix)) if (reads.entryOf(key) !== undefined) yield key;
}
