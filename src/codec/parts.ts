import { CheckpointError } from '../contract/errors.js';
import { canonicalJson } from './canonical-json.js';
import { type JsonObject, type JsonValue } from '../contract/json.js';
import { sha256Hex } from './sha256.js';
import { utf8Encode } from './utf8.js';
import { canonicalJsonBytes, canonicalJsonLength, jsonStringBytes } from './json-pieces.js';
import { assertObjectArgument, assertFunctionArgument } from '../contract/arguments.js';
import { type PartRef, type PartFile, type SplitOptions, type SplitResult } from '../contract/split.js';

/**
 * Oversized snapshots (phased-workflow-github.md `size_management`: "split large arrays
 * into separate files, store references in main checkpoint") are stored as a main
 * document in which large values are replaced by references to part files:
 *
 * - `{"$savepoint_part": {"key": "…", "sha256": "…", "bytes": n}}` — the value is the part's JSON;
 * - `{"$savepoint_parts": [{"key": …}, …]}` — an array split into chunks, concatenated on read.
 *
 * The document's checksum and schema apply to the reassembled document, so a reader
 * that resolves references sees exactly what was written.
 */
export const PART_MARKER = '$savepoint_part';
/** Marker of a chunked array. */
export const PARTS_MARKER = '$savepoint_parts';

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function isRef(v: JsonObject): boolean {
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === PART_MARKER || keys[0] === PARTS_MARKER);
}

/** True when `value` holds any part reference. */
export function hasPartRefs(value: JsonValue): boolean {
  if (Array.isArray(value)) return value.some(hasPartRefs);
  if (!isObject(value)) return false;
  if (partRefsOf(value)) return true;
  return Object.values(value).some(hasPartRefs);
}

/**
 * A reference exactly as savepoint writes it: `bytes`, `key` and `sha256`, nothing else. The
 * members of a reference are outside the document's checksum (it covers the reassembled
 * document), so a reference edited into any other shape is not taken for one: it is data,
 * and the checksum catches it. `bytes` is checked against the part's stored length where the
 * stored bytes are read.
 */
const isPartRef = (r: unknown): r is PartRef => {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return false;
  const { key, sha256, bytes } = r as { key?: unknown; sha256?: unknown; bytes?: unknown };
  return (
    typeof key === 'string' &&
    typeof sha256 === 'string' &&
    typeof bytes === 'number' &&
    Number.isSafeInteger(bytes) &&
    bytes > 0 &&
    Object.keys(r).length === 3
  );
};

/**
 * @internal The parts `value` refers to when it is a part reference — its one member a marker
 * whose value is a reference (`key` and `sha256` strings) or a non-empty list of them — else undefined.
 * An object of one marker member whose value is anything else cannot refer to a part: it is
 * read as the data it is (a raw `TypeError` on a payload that held `{"$savepoint_part": ""}`).
 */
export function partRefsOf(value: JsonObject): { readonly refs: readonly PartRef[]; readonly chunked: boolean } | undefined {
  if (!isRef(value)) return undefined;
  const single = value[PART_MARKER];
  if (single !== undefined) return isPartRef(single) ? { refs: [single], chunked: false } : undefined;
  const list = value[PARTS_MARKER];
  // savepoint never writes an empty list (an array cut into chunks has at least one): `[]` is data.
  return Array.isArray(list) && list.length > 0 && list.every(isPartRef)
    ? { refs: list as unknown as PartRef[], chunked: true }
    : undefined;
}

/**
 * @internal One value of a document that could move to a part file, as the splitting
 * decisions see it (the object splitter below and the text splitter, split-text.ts, make
 * the same decisions, so both store the same bytes).
 */
export interface SplitSlot {
  /** Canonical JSON size in bytes. */
  readonly bytes: number;
  /** Size now, after values inside it moved out. */
  current: number;
  /** For an array: the size of each item (needed only when the array is over the limit: it may be cut into chunks). */
  readonly items?: readonly number[];
  /** Candidate slots inside this value (marked dead when it moves). */
  readonly children: SplitSlot[];
  /** The nearest enclosing slot. */
  up?: SplitSlot;
  dead: boolean;
  readonly isArray: boolean;
}

/** One value of the document that could move to a part file. */
interface Slot extends SplitSlot {
  /** Where the value is (let go once it moved: see {@link kill}). */
  parent: JsonObject | JsonValue[];
  readonly key: string | number;
  value: JsonValue;
  readonly children: Slot[];
  up?: Slot;
}

/** @internal */
export const MIN_MOVE = 256; // moving smaller values would cost more in references than it saves

/**
 * Canonical JSON size of `value`, computed once for every node bottom-up (linear in the
 * document), collecting the values of at least {@link MIN_MOVE} bytes as slots. Part
 * references are never moved. Throws `checkpoint_too_large` at once for a string that
 * alone exceeds `maxBytes`: no split can make such a document fit.
 */
function measure(
  value: JsonValue,
  parent: JsonObject | JsonValue[] | undefined,
  key: string | number,
  out: Slot[],
  siblings: Slot[],
  maxBytes: number,
): number {
  let bytes: number;
  const children: Slot[] = [];
  let items: number[] | undefined;
  if (typeof value === 'string') {
    bytes = jsonStringBytes(value);
    if (bytes > maxBytes) {
      throw valueTooLarge(bytes, maxBytes);
    }
  } else if (Array.isArray(value)) {
    bytes = 2 + Math.max(0, value.length - 1);
    items = [];
    for (let i = 0; i < value.length; i++) {
      const b = measure(value[i]!, value, i, out, children, maxBytes);
      items.push(b);
      bytes += b;
    }
  } else if (isObject(value)) {
    const keys = Object.keys(value);
    bytes = 2;
    let count = 0;
    for (const k of keys) {
      const v = value[k];
      if (v === undefined) continue;
      if (parent === undefined && k === 'integrity') {
        bytes += jsonStringBytes(k) + 1 + utf8Encode(canonicalJson(v)).length; // never moved
      } else
        bytes +=
          jsonStringBytes(k) + 1 + (isRef(value) ? utf8Encode(canonicalJson(v)).length : measure(v, value, k, out, children, maxBytes));
      count++;
    }
    bytes += Math.max(0, count - 1);
  } else bytes = canonicalJson(value).length; // numbers, booleans, null: ASCII
  if (parent !== undefined && bytes >= MIN_MOVE && !(isObject(value) && isRef(value))) {
    const slot: Slot = {
      parent,
      key,
      value,
      bytes,
      current: bytes,
      children,
      dead: false,
      isArray: Array.isArray(value),
      ...(items ? { items } : {}),
    };
    for (const child of children) child.up = slot;
    out.push(slot);
    siblings.push(slot);
  } else for (const child of children) siblings.push(child); // not a spread: there may be 100k+
  return bytes;
}

/** Where a moved slot points: nothing. */
const DETACHED: JsonValue[] = [];

/**
 * Marks `slot` and every slot inside it dead, and lets go of their values and holders: the
 * part file now holds what they held, and a document handed over (`owned`) is then freed
 * piece by piece as it moves out instead of living until the split ends.
 */
function kill(slot: Slot): void {
  killSlots(slot, (s) => {
    s.value = null;
    s.parent = DETACHED;
  });
}

/** @internal Marks `slot` and every slot inside it dead (`release` lets go of what each held), and empties their lists of children. */
export function killSlots<S extends SplitSlot>(slot: S, release?: (s: S) => void): void {
  const stack: SplitSlot[] = [slot];
  while (stack.length > 0) {
    const s = stack.pop()!;
    if (s.dead && s !== slot) continue;
    s.dead = true;
    release?.(s as S);
    for (const child of s.children) stack.push(child); // not push(...children): a spread of 100k+ arguments overflows the stack
    s.children.length = 0;
  }
}

/**
 * Splits `document` so that its main file is at most `maxBytes`, moving the largest
 * values (objects, arrays, long strings) into part files named by `partKey(n)`. Arrays
 * larger than `maxBytes` whose items each fit are cut into chunks. The `integrity` member
 * is never moved. Throws `checkpoint_too_large` when a single value that cannot be cut (a
 * string) is over `maxBytes`, or when even the references do not fit.
 *
 * Linear in the document: every value's size is measured once, the
 * candidates are taken largest first, and each byte is serialized into at most one part.
 */
export async function splitDocument(
  document: JsonObject,
  maxBytes: number,
  partKey: (n: number) => string,
  options: SplitOptions = {},
): Promise<SplitResult> {
  assertObjectArgument(document, 'splitDocument', 'document');
  assertFunctionArgument(partKey, 'splitDocument', 'partKey');
  // A copy unless the caller hands over a document of its own (the writer's private parse):
  // a copy of a document over the limit is one more payload's worth of memory at the peak.
  const main = options.owned === true ? document : (structuredClone(document) as JsonObject);
  const slots: Slot[] = [];
  const mainBytes = measure(main, undefined, '', slots, [], maxBytes);
  const { parts } = await moveLargestFirst(slots, mainBytes, maxBytes, partKey, {
    // Straight to bytes: a big string is encoded from the document's own string, never copied as text first.
    bytesOf: (slot) => canonicalJsonBytes(slot.value),
    chunkBytesOf: (slot, from, to) => canonicalJsonBytes((slot.value as JsonValue[]).slice(from, to)),
    place: (slot, replacement) => {
      (slot.parent as Record<string | number, JsonValue>)[slot.key] = replacement;
      kill(slot);
    },
  });
  const out = canonicalJsonLength(main);
  if (out > maxBytes) throw mainTooLarge(out, maxBytes);
  return { main, parts };
}

/** @internal `checkpoint_too_large` for a main document that still does not fit after splitting. */
export function mainTooLarge(bytes: number, maxBytes: number): CheckpointError {
  return new CheckpointError(
    'checkpoint_too_large',
    `snapshot main document is ${bytes} bytes after splitting, over the ${maxBytes}-byte limit`,
    {
      details: { bytes, limit: maxBytes },
    },
  );
}

/** @internal `checkpoint_too_large` for a string that alone is over the limit: no split can make its document fit. */
export function valueTooLarge(bytes: number, maxBytes: number): CheckpointError {
  return new CheckpointError(
    'checkpoint_too_large',
    `a single value of ${bytes} bytes exceeds the ${maxBytes}-byte limit and cannot be split`,
    { details: { bytes, limit: maxBytes } },
  );
}

/** @internal How a splitter encodes and replaces the values {@link moveLargestFirst} decides to move. */
export interface SlotMover<S extends SplitSlot> {
  /** The canonical UTF-8 of the slot's value as it is now (values moved out of it replaced by their references). */
  bytesOf(slot: S): Uint8Array;
  /** The canonical UTF-8 of the array of the slot's items `from` to `to` (nothing inside it moved). */
  chunkBytesOf(slot: S, from: number, to: number): Uint8Array;
  /** Puts `replacement` (a reference) in place of the slot's value, whose canonical text is `text`, and marks the slot and every slot inside it dead. */
  place(slot: S, replacement: JsonValue, text: string): void;
}

/**
 * @internal The splitting decisions, shared by the object and the text splitter: moves the
 * largest values first into part files named by `partKey(n)` until the main document, of
 * `mainBytes` now, fits in `maxBytes`; an array too large for one part whose items each fit
 * is cut into chunks. `slots` is every candidate in the order a walk of the parsed document
 * meets their ends. Returns the part files, in the order their keys were given, and the main
 * document's size after the moves.
 *
 * Linear in the document: candidates are taken largest first, and each
 * byte is serialized into at most one part.
 */
export async function moveLargestFirst<S extends SplitSlot>(
  slots: S[],
  mainBytes: number,
  maxBytes: number,
  partKey: (n: number) => string,
  mover: SlotMover<S>,
): Promise<{ parts: PartFile[]; mainBytes: number }> {
  const parts: PartFile[] = [];
  const makePart = async (data: Uint8Array): Promise<PartFile> => {
    const part: PartFile = { key: partKey(parts.length + 1), sha256: await sha256Hex(data), bytes: data.length, data };
    parts.push(part);
    return part;
  };
  const refOf = (p: PartFile): PartRef => ({ key: p.key, sha256: p.sha256, bytes: p.bytes });
  /** Moves `slot` to part files if it can; false when it is too large to move whole. */
  const move = async (slot: S): Promise<boolean> => {
    let replacement: JsonValue;
    if (slot.current <= maxBytes) {
      replacement = { [PART_MARKER]: refOf(await makePart(mover.bytesOf(slot))) } as unknown as JsonValue;
    } else if (slot.isArray && slot.current === slot.bytes && slot.items && slot.items.every((b) => b + 2 <= maxBytes)) {
      // An array too large for one part whose items each fit: chunk it greedily by item size.
      const refs: PartRef[] = [];
      let from = 0;
      let chunkBytes = 2;
      for (const [i, size] of slot.items.entries()) {
        const b = size + 1;
        if (i > from && chunkBytes + b > maxBytes) {
          refs.push(refOf(await makePart(mover.chunkBytesOf(slot, from, i))));
          from = i;
          chunkBytes = 2;
        }
        chunkBytes += b;
      }
      if (slot.items.length > from) refs.push(refOf(await makePart(mover.chunkBytesOf(slot, from, slot.items.length))));
      replacement = { [PARTS_MARKER]: refs } as unknown as JsonValue;
    } else return false; // too large to move whole: its own values are candidates further down
    const text = canonicalJson(replacement);
    const delta = utf8Encode(text).length - slot.current;
    mainBytes += delta;
    for (let a = slot.up; a; a = a.up) a.current += delta;
    mover.place(slot, replacement, text);
    return true;
  };
  // Largest first (stable: among equal sizes, document order); each value is serialized into at most one part.
  slots.sort((a, b) => b.bytes - a.bytes);
  for (const slot of slots) {
    if (mainBytes <= maxBytes) break;
    if (!slot.dead) await move(slot);
  }
  // Still too large: the references themselves add up. Enclosing values that were too large
  // before their contents moved out may fit now (a part may hold references): move them,
  // largest first, in passes over what is left. A move only shrinks its enclosing values, so
  // each pass is linear and there are at most as many passes as the document is deep.
  for (let progress = true; progress && mainBytes > maxBytes;) {
    progress = false;
    const left = slots.filter((s) => !s.dead).sort((a, b) => b.current - a.current);
    for (const slot of left) {
      if (mainBytes <= maxBytes) break;
      if (!slot.dead && slot.current <= maxBytes && slot.current >= MIN_MOVE && (await move(slot))) progress = true;
    }
  }
  return { parts, mainBytes };
}

/** What a part loader returns: the part's JSON value, or its stored bytes (checked without serializing them again). */
export type LoadedPart = JsonValue | { readonly bytes: Uint8Array; readonly value: () => JsonValue };

const isLoadedBytes = (v: LoadedPart): v is { bytes: Uint8Array; value: () => JsonValue } =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  (v as { bytes?: unknown }).bytes instanceof Uint8Array &&
  typeof (v as { value?: unknown }).value === 'function';

/**
 * Replaces every part reference in `document` with the part's content, loaded through
 * `load` and checked against its recorded SHA-256 (`checkpoint_integrity_mismatch`
 * on a mismatch, `checkpoint_not_found` for a missing part). A loader that returns the
 * part's stored bytes has them hashed as stored (part files are canonical JSON); only
 * when that does not match is the parsed value re-serialized and checked.
 *
 * Linear in the document: references are collected in one synchronous walk, the parts
 * of each level are loaded a few at a time ({@link loadBatches}), and values are substituted in place.
 */
export async function resolveParts(document: JsonValue, load: (key: string) => Promise<LoadedPart | undefined>): Promise<JsonValue> {
  const fetchRef = async (ref: PartRef): Promise<JsonValue> => {
    const loaded = await load(ref.key);
    if (loaded === undefined)
      throw new CheckpointError('checkpoint_not_found', `part file ${ref.key} is missing`, { details: { key: ref.key } });
    if (isLoadedBytes(loaded)) {
      if (loaded.bytes.length !== ref.bytes) throw mismatch(ref);
      const value = loaded.value();
      if ((await sha256Hex(loaded.bytes)) !== ref.sha256 && (await sha256Hex(canonicalJson(value))) !== ref.sha256) throw mismatch(ref);
      return value;
    }
    if ((await sha256Hex(canonicalJson(loaded))) !== ref.sha256) throw mismatch(ref);
    return loaded as JsonValue;
  };
  const root: { value: JsonValue } = { value: document };
  let pending: { holder: Record<string | number, JsonValue>; key: string | number; ref: JsonObject }[] = [];
  const collect = (holder: Record<string | number, JsonValue>, key: string | number): void => {
    const stack: [Record<string | number, JsonValue>, string | number][] = [[holder, key]];
    while (stack.length > 0) {
      const [h, k] = stack.pop()!;
      const v = h[k]!;
      if (Array.isArray(v)) for (let i = 0; i < v.length; i++) stack.push([v as unknown as Record<number, JsonValue>, i]);
      else if (isObject(v)) {
        if (partRefsOf(v)) pending.push({ holder: h, key: k, ref: v });
        else for (const name of Object.keys(v)) stack.push([v, name]);
      }
    }
  };
  collect(root, 'value');
  while (pending.length > 0) {
    const level = pending;
    pending = [];
    const loadOne = async ({ ref }: { ref: JsonObject }): Promise<JsonValue> => {
      const { refs, chunked } = partRefsOf(ref)!;
      if (!chunked) return fetchRef(refs[0]!);
      const chunks: JsonValue[] = [];
      for (const chunkRef of refs) {
        const c = await fetchRef(chunkRef);
        if (Array.isArray(c)) for (const item of c) chunks.push(item);
        else chunks.push(c);
      }
      return chunks;
    };
    const loaded: JsonValue[] = [];
    for (const batch of loadBatches(level)) for (const value of await Promise.all(batch.map(loadOne))) loaded.push(value);
    level.forEach(({ holder, key }, i) => {
      holder[key] = loaded[i]!;
      collect(holder, key); // a part may itself hold references
    });
  }
  return root.value;
}

/**
 * Parts loaded at once, and their stored bytes at most (a batch holds at least one part). All
 * of a level at once held every part's stored bytes in memory beside the values parsed from them
 * (a 64 MiB snapshot: its bytes whole, then its values); a few at a time keep the reads
 * overlapped and only those parts' bytes alive.
 */
const LOADS_AT_ONCE = 8;
const BYTES_AT_ONCE = 16 * 1024 * 1024;

/** Stored bytes a reference loads at once (a chunked array's chunks load one after the other); 0 when the reference does not say. */
function refBytes(ref: JsonObject): number {
  const size = (r: unknown): number => {
    const b = (r as { bytes?: unknown } | null)?.bytes;
    return typeof b === 'number' && b > 0 ? b : 0;
  };
  const single = ref[PART_MARKER];
  if (single !== undefined) return size(single);
  const chunks = ref[PARTS_MARKER];
  return Array.isArray(chunks) ? chunks.reduce<number>((max, c) => Math.max(max, size(c)), 0) : 0;
}

/** `level` in order, cut into batches of at most {@link LOADS_AT_ONCE} references and {@link BYTES_AT_ONCE} bytes. */
function loadBatches<T extends { ref: JsonObject }>(level: readonly T[]): T[][] {
  const out: T[][] = [];
  let batch: T[] = [];
  let bytes = 0;
  for (const item of level) {
    const size = refBytes(item.ref);
    if (batch.length > 0 && (batch.length >= LOADS_AT_ONCE || bytes + size > BYTES_AT_ONCE)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(item);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

function mismatch(ref: PartRef): CheckpointError {
  return new CheckpointError('checkpoint_integrity_mismatch', `part file ${ref.key} does not match its checksum`, {
    details: { key: ref.key },
  });
}
