import { CheckpointError } from '../model/errors.js';
import { canonicalJson, type JsonObject, type JsonValue } from './canonical-json.js';
import { sha256Hex } from './sha256.js';
import { utf8Encode } from './utf8.js';

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

/** A reference to one part file. */
export interface PartRef {
  readonly key: string;
  readonly sha256: string;
  readonly bytes: number;
}

/** A part file to write before the main document. */
export interface PartFile extends PartRef {
  readonly data: Uint8Array;
}

/** Result of {@link splitDocument}. */
export interface SplitResult {
  /** The main document with references in place of the moved values. */
  readonly main: JsonObject;
  /** Part files, to be written (create-only) before the main document. */
  readonly parts: readonly PartFile[];
}

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function isRef(v: JsonObject): boolean {
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === PART_MARKER || keys[0] === PARTS_MARKER);
}

/** True when `value` holds any part reference. */
export function hasPartRefs(value: JsonValue): boolean {
  if (Array.isArray(value)) return value.some(hasPartRefs);
  if (!isObject(value)) return false;
  if (isRef(value)) return true;
  return Object.values(value).some(hasPartRefs);
}

const size = (v: JsonValue): number => utf8Encode(canonicalJson(v)).length;

interface Slot {
  parent: JsonObject | JsonValue[];
  key: string | number;
  value: JsonValue;
  bytes: number;
}

/**
 * Splits `document` so that its main file is at most `maxBytes`, moving the largest
 * values (objects, arrays, long strings) into part files named by `partKey(n)`. Arrays
 * larger than `maxBytes` are cut into chunks. The `integrity` member is never moved.
 * Throws `checkpoint_too_large` when a single value that cannot be cut (a string) is
 * over `maxBytes`, or when even the references do not fit.
 */
export async function splitDocument(document: JsonObject, maxBytes: number, partKey: (n: number) => string): Promise<SplitResult> {
  const main = structuredClone(document) as JsonObject;
  const parts: PartFile[] = [];
  const minMove = 256; // moving smaller values would cost more in references than it saves
  const makePart = async (value: JsonValue): Promise<PartFile> => {
    const data = utf8Encode(canonicalJson(value));
    if (data.length > maxBytes) {
      throw new CheckpointError('checkpoint_too_large', `a single value of ${data.length} bytes exceeds the ${maxBytes}-byte limit and cannot be split`, {
        details: { bytes: data.length, limit: maxBytes },
      });
    }
    return { key: partKey(parts.length + 1), sha256: await sha256Hex(data), bytes: data.length, data };
  };
  const refOf = (p: PartFile): PartRef => ({ key: p.key, sha256: p.sha256, bytes: p.bytes });

  for (let guard = 0; size(main) > maxBytes; guard++) {
    if (guard > 100_000) break;
    // Collect candidate slots, largest first. Refs and the integrity block are never moved.
    const slots: Slot[] = [];
    const visit = (parent: JsonObject | JsonValue[], key: string | number, value: JsonValue): void => {
      if (isObject(value) && isRef(value)) return;
      const bytes = size(value);
      if (bytes < minMove) return;
      slots.push({ parent, key, value, bytes });
      if (Array.isArray(value)) value.forEach((v, i) => visit(value, i, v));
      else if (isObject(value)) for (const [k, v] of Object.entries(value)) visit(value, k, v);
    };
    for (const [k, v] of Object.entries(main)) if (k !== 'integrity') visit(main, k, v);
    slots.sort((a, b) => b.bytes - a.bytes);
    // An oversized array whose items each fit in a part is cut into chunks first: moving
    // its items one by one (each the "largest value that fits") would take one pass per
    // item, every pass re-serializing the whole document — hours for a 12 MB array of 1 KB items.
    const chunkable = slots.find((s) => s.bytes > maxBytes && Array.isArray(s.value) && s.value.every((v) => size(v) + 2 <= maxBytes));
    const slot = chunkable ?? slots.find((s) => s.bytes <= maxBytes) ?? slots.find((s) => Array.isArray(s.value));
    if (!slot) break;
    let replacement: JsonValue;
    if (slot.bytes <= maxBytes) {
      const part = await makePart(slot.value);
      parts.push(part);
      replacement = { [PART_MARKER]: refOf(part) } as unknown as JsonValue;
    } else {
      // An array too large for one part: chunk it greedily by element size.
      const chunks: JsonValue[][] = [];
      let chunk: JsonValue[] = [];
      let chunkBytes = 2;
      for (const item of slot.value as JsonValue[]) {
        const b = size(item) + 1;
        if (chunk.length > 0 && chunkBytes + b > maxBytes) {
          chunks.push(chunk);
          chunk = [];
          chunkBytes = 2;
        }
        chunk.push(item);
        chunkBytes += b;
      }
      if (chunk.length > 0) chunks.push(chunk);
      const refs: PartRef[] = [];
      for (const c of chunks) {
        const part = await makePart(c);
        parts.push(part);
        refs.push(refOf(part));
      }
      replacement = { [PARTS_MARKER]: refs } as unknown as JsonValue;
    }
    (slot.parent as Record<string | number, JsonValue>)[slot.key] = replacement;
  }
  const mainBytes = size(main);
  if (mainBytes > maxBytes) {
    throw new CheckpointError('checkpoint_too_large', `snapshot main document is ${mainBytes} bytes after splitting, over the ${maxBytes}-byte limit`, {
      details: { bytes: mainBytes, limit: maxBytes },
    });
  }
  return { main, parts };
}

/**
 * Replaces every part reference in `document` with the part's content, loaded through
 * `load` and checked against its recorded SHA-256 (`checkpoint_integrity_mismatch`
 * on a mismatch, `checkpoint_not_found` for a missing part).
 */
export async function resolveParts(document: JsonValue, load: (key: string) => Promise<JsonValue | undefined>): Promise<JsonValue> {
  const fetchRef = async (ref: PartRef): Promise<JsonValue> => {
    const value = await load(ref.key);
    if (value === undefined) throw new CheckpointError('checkpoint_not_found', `part file ${ref.key} is missing`, { details: { key: ref.key } });
    const actual = await sha256Hex(canonicalJson(value));
    if (actual !== ref.sha256) throw new CheckpointError('checkpoint_integrity_mismatch', `part file ${ref.key} does not match its checksum`, { details: { key: ref.key } });
    return value;
  };
  const walk = async (value: JsonValue): Promise<JsonValue> => {
    if (Array.isArray(value)) return Promise.all(value.map(walk));
    if (!isObject(value)) return value;
    if (isRef(value)) {
      const single = value[PART_MARKER] as unknown as PartRef | undefined;
      if (single) return walk(await fetchRef(single));
      const many = value[PARTS_MARKER] as unknown as PartRef[];
      const chunks = await Promise.all(many.map(fetchRef));
      return walk(chunks.flatMap((c) => (Array.isArray(c) ? c : [c])));
    }
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) out[k] = await walk(v);
    return out;
  };
  return walk(document);
}
