import {
  linkedKeyOf,
  pointerOf,
  type LinkedValues,
  type ListedObject,
  type MemberLink,
  type ReadLinks,
} from '../../contract/linked-read.js';
import { readTooLarge } from '../../contract/read-limit.js';
import type { StoredObject } from '../../contract/storage.js';
import { isKey, isPrefix } from '../keys.js';
import { assertLinkedReadArguments } from '../linked-read-arguments.js';
import { errnoOf, fsError } from './io.js';
import type { AckedState } from './journal/index.js';
import { readLimitOf, readStored, readStoredNow, type ReadLimit } from './read.js';
import { READ_LATER, readFilesNow } from './read-now.js';
import { assertOpen, scrubFor, track, type FsStoreState } from './store-state.js';
import type { Dir } from './dir.js';

/*
 * `getLinked` (contract/linked-read.ts) on fs: a value, the key one of its members names and the
 * files under the prefix another names, read in one synchronous pass where each could be read
 * synchronously (read-now.ts). A LangGraph checkpoint read by id is its document and its writes
 * folder: through `get`, `list` and a `get` per writes document, each file of the folder was
 * `lstat`ed twice (by the listing, then by the read) and each call was a promise or a generator
 * of its own; here the folder's files are found and read in one pass, one call answered by one
 * promise. What cannot be read synchronously (the store not open yet, another instance's
 * journal records to read, a file too large, a folder holding subdirectories or many entries, a
 * value that is not a JSON object) is left: the value read alone, a link left unfollowed, which
 * `readLinked` then reads step by step. The parts are read in one run of synchronous code, so
 * nothing of this process changes the tree between them; another process's change meanwhile is
 * concurrent with the read, as between separate reads.
 */

/** `getLinked`: {@link linkedNow}'s answer, or the value alone, read asynchronously, when the value could not be read synchronously. */
export async function getLinkedObjects(state: FsStoreState, key: string, links: ReadLinks): Promise<LinkedValues | undefined> {
  assertOpen(state);
  assertLinkedReadArguments(key, links, 'fsStorage.getLinked');
  const now = linkedNow(state, key, links);
  if (now !== READ_LATER) return now;
  const value = await track(state, readStored(state, key));
  return value && { value };
}

/** The value and its links read synchronously; {@link READ_LATER} when the value itself cannot be. */
function linkedNow(state: FsStoreState, key: string, links: ReadLinks): LinkedValues | undefined | typeof READ_LATER {
  const limit = readLimitOf(state, undefined);
  const value = readStoredNow(state, key, limit);
  if (value === undefined || value === READ_LATER) return value;
  const pointer = links.get || links.list ? pointerRead(state, key, value.bytes) : undefined;
  const getKey = links.get && linkedName(pointer, links.get, isKey);
  const got = getKey === undefined ? undefined : gotNow(state, getKey, limit);
  const prefix = links.list && linkedName(pointer, links.list, isPrefix);
  const listed = prefix === undefined ? undefined : listedNow(state, prefix, limit);
  return { value, ...(got ? { got } : {}), ...(listed ? { listed } : {}) };
}

/** Values whose parse is kept: a value read again (an old checkpoint's document) is compared, not parsed again. */
const POINTERS_KEPT = 256;
/** Values larger than this are parsed every time (kept ones are compared byte for byte on every read). */
const POINTER_KEPT_MAX_BYTES = 64 * 1024;

/** The pointers parsed lately per store, by key, in use order (oldest first), each with the bytes it was parsed from. */
const keptPointers = new WeakMap<FsStoreState, Map<string, { readonly bytes: Buffer; readonly pointer: Pointer }>>();

type Pointer = ReturnType<typeof pointerOf>;

/**
 * {@link pointerOf} of the value just read from `key`: the parse kept from a read of the same
 * bytes (compared natively: far cheaper than parsing a document again), else parsed and kept.
 */
function pointerRead(state: FsStoreState, key: string, bytes: Uint8Array): Pointer {
  if (bytes.length > POINTER_KEPT_MAX_BYTES) return pointerOf(bytes);
  let kept = keptPointers.get(state);
  if (!kept) keptPointers.set(state, (kept = new Map()));
  const entry = kept.get(key);
  if (entry?.bytes.equals(bytes)) {
    kept.delete(key);
    kept.set(key, entry);
    return entry.pointer;
  }
  const pointer = pointerOf(bytes);
  kept.delete(key);
  // A copy: the caller owns the bytes it was handed.
  kept.set(key, { bytes: Buffer.from(bytes), pointer });
  if (kept.size > POINTERS_KEPT) kept.delete(kept.keys().next().value!);
  return pointer;
}

/** The key (or prefix) `link` names in `pointer`, when it names a valid one (else the caller's step-by-step read words the refusal). */
/** The key (or prefix) `link` names in `pointer`, when it names a valid one. */
export function linkedName(
  pointer: Readonly<Record<string, unknown>> | undefined,
  link: MemberLink,
  valid: (name: string) => boolean,
): string | undefined {
  const name = linkedKeyOf(pointer, link);
  return name !== undefined && valid(name) ? name : undefined;
}

/** The linked key's object, read synchronously; undefined (unfollowed) when it cannot be. */
function gotNow(state: FsStoreState, key: string, limit: ReadLimit): LinkedValues['got'] {
  const object = readStoredNow(state, key, limit);
  return object === READ_LATER ? undefined : { key, object };
}

/**
 * Every key under `prefix` with its value, read synchronously: the files of its directory,
 * merged with the journal's acknowledged writes not applied yet (as a listing merges them);
 * undefined (unfollowed) when they cannot be read synchronously.
 */
function listedNow(state: FsStoreState, prefix: string, limit: ReadLimit): LinkedValues['listed'] {
  const root = state.root;
  if (!root) return undefined;
  const acked = state.journal ? state.journal.unappliedNow(prefix) : NO_RECORDS;
  if (acked === undefined) return undefined;
  const slash = prefix.lastIndexOf('/');
  const dirKey = slash < 0 ? '' : prefix.slice(0, slash);
  const opened: Dir[] = [];
  let files: ListedObject[] | undefined | typeof READ_LATER;
  try {
    files = readFilesNow(root, dirKey, prefix.slice(slash + 1), prefix, isKey, limit.bytes, limit.whose, opened);
  } catch (err) {
    if (errnoOf(err) === 'ENAMETOOLONG') files = undefined;
    else throw fsError(err, 'checkpoint_storage_unavailable', 'listing', prefix, scrubFor(state, opened));
  }
  if (files === READ_LATER) return undefined;
  return { prefix, objects: acked.size > 0 ? withUnapplied(files ?? [], acked, limit) : (files ?? []) };
}

const NO_RECORDS: ReadonlyMap<string, AckedState> = new Map();

/** The files read, with the journal's acknowledged writes not applied yet in their place: a put answers its bytes, a delete leaves the key out. */
function withUnapplied(files: readonly ListedObject[], acked: ReadonlyMap<string, AckedState>, limit: ReadLimit): ListedObject[] {
  const byKey = new Map<string, ListedObject>();
  for (const file of files) byKey.set(file.key, file);
  for (const [key, state] of acked) {
    if (state.bytes === null) byKey.delete(key);
    else if (state.version !== undefined) byKey.set(key, { key, ...ackedObject(key, state.bytes, state.version, limit) });
    // A put journaled by an older savepoint (no version in its record): its file is what is read.
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

function ackedObject(key: string, bytes: Uint8Array, version: string, limit: ReadLimit): StoredObject {
  if (bytes.length > limit.bytes) throw readTooLarge(key, bytes.length, limit.bytes, limit.whose);
  return { bytes: bytes.slice(), version };
}
