/**
 * The packed store's reads beyond `get`: the linked read (contract/linked-read.ts) and the
 * listing by name. Both answer from the index in memory and `pread`s of the values, with no
 * file-system metadata call: a LangGraph thread's head, the checkpoint it names and that
 * checkpoint's writes are index lookups and one `pread` each, in one synchronous pass (nothing
 * of this process changes the index between them; the index changes only once a group's write
 * returned, so every entry read names durable, never overwritten bytes).
 */
import {
  assertReadLinks,
  linkedKeyOf,
  pointerOf,
  type LinkedValues,
  type ListedObject,
  type MemberLink,
  type ReadLinks,
} from '../../contract/linked-read.js';
import { readTooLarge } from '../../contract/read-limit.js';
import type { StoredObject } from '../../contract/storage.js';
import { assertKey, assertPrefix, isKey, isPrefix } from '../keys.js';

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
function assertLinkKeys(links: ReadLinks): void {
  if (links.get) assertKey(`${links.get.before}x${links.get.after}`);
  if (links.list) assertPrefix(`${links.list.before}x${links.list.after}`);
}

function objectAt<Entry>(reads: PackedReads<Entry>, key: string, entry: Entry): StoredObject {
  const length = reads.lengthOf(entry);
  if (length > reads.limit.bytes) throw readTooLarge(key, length, reads.limit.bytes, reads.limit.whose);
  return { bytes: reads.readNow(entry), version: reads.versionOf(entry) };
}

/** The key (or prefix) `link` names in `pointer`, when it names a valid one. */
function linkedName(pointer: Pointer, link: MemberLink, valid: (name: string) => boolean): string | undefined {
  const name = linkedKeyOf(pointer, link);
  return name !== undefined && valid(name) ? name : undefined;
}

/** A linked read over one packed store: `getLinked` of the contract, keeping the parse of the pointers it read lately. */
export function packedLinkedRead<Entry>(reads: PackedReads<Entry>): (key: string, links: ReadLinks) => LinkedValues | undefined {
  const kept = new Map<string, KeptPointer>();
  const pointerAt = (key: string, value: StoredObject): Pointer => {
    const entry = kept.get(key);
    kept.delete(key);
    const pointer = entry?.version === value.version ? entry.pointer : pointerOf(value.bytes);
    kept.set(key, { version: value.version, pointer });
    if (kept.size > POINTERS_KEPT) kept.delete(kept.keys().next().value!);
    return pointer;
  };
  return (key, links) => {
    assertKey(key);
    assertReadLinks(links, 'fsStorage.getLinked');
    assertLinkKeys(links);
    const entry = reads.entryOf(key);
    if (entry === undefined) return undefined;
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
    };
  };
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

/** `listKeys(prefix)`: the keys `list(prefix)` yields, in its order, without their versions. */
export async function* packedKeyNames<Entry>(reads: PackedReads<Entry>, prefix: string): AsyncGenerator<string> {
  assertPrefix(prefix);
  for (const key of reads.keysUnder(prefix)) if (reads.entryOf(key) !== undefined) yield key;
}
