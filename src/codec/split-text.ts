import { utf8EncodeInto } from './utf8.js';
import { killSlots, MIN_MOVE, moveLargestFirst, mainTooLarge, PART_MARKER, PARTS_MARKER, valueTooLarge, type SplitSlot } from './parts.js';
import { type PartFile } from '../contract/split.js';

/**
 * The core splitter ({@link splitDocument}) working on a document's canonical text instead of
 * its parse. A payload of many small values weighs 5 to 10 times its JSON
 * text as objects: parsing it back to split it cost more than 5× the payload at the peak. Here
 * one scan of the text measures every value and records where each candidate starts and
 * ends; the same decisions as the object splitter's ({@link moveLargestFirst}) pick the values
 * to move; each part is then encoded straight from spans of the text, the references of values
 * moved out of it written in their place. No object of the payload is ever built, and the
 * stored bytes are those the object splitter stores (a property test compares them).
 *
 * The text must be canonical JSON (as `canonicalJson` writes it) of an object, in segments
 * that only cut a string token (a big string by reference between two `"` segments) or between
 * tokens: the writer's sealed document (`payloadSealerOf`).
 */

/** A candidate value, where it is in the text. */
interface TextSlot extends SplitSlot {
  /** UTF-16 offset of its first character in the whole text. */
  readonly start: number;
  /** UTF-16 offset after its last character. */
  readonly end: number;
  /** For an array over the limit (with `items`): where each item starts. */
  readonly itemStarts?: readonly number[];
  children: TextSlot[];
  up?: TextSlot;
  /** Its reference's canonical text, once it moved. */
  ref?: string;
  /** A value inside it moved: its text is no longer the span's. */
  touched: boolean;
}

/** The document's text in segments, addressed by offsets in the whole. */
interface Segmented {
  readonly segments: readonly string[];
  /** Offset of each segment's first character. */
  readonly starts: readonly number[];
  readonly ascii: readonly boolean[];
  readonly length: number;
}

// eslint-disable-next-line no-control-regex -- what is not ASCII
const NOT_ASCII = /[^\u0000-\u007f]/;

function segmented(segments: readonly string[]): Segmented {
  const starts: number[] = [];
  const ascii: boolean[] = [];
  let length = 0;
  for (const s of segments) {
    starts.push(length);
    ascii.push(!NOT_ASCII.test(s));
    length += s.length;
  }
  return { segments, starts, ascii, length };
}

/** UTF-8 length of `s` from `a` to `b` (a text JSON wrote: no lone surrogate). */
function utf8Count(s: string, a: number, b: number): number {
  let n = b - a;
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 2; // a surrogate pair: 2 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

/** Where the string whose text goes on at `from` in `s` ends: the next `"` not escaped by an odd run of backslashes; -1 if not in `s`. */
function closingQuote(s: string, from: number): number {
  let q = s.indexOf('"', from);
  while (q >= 0) {
    let k = q - 1;
    while (k >= from && s.charCodeAt(k) === 0x5c) k--;
    if ((q - 1 - k) % 2 === 0) return q;
    q = s.indexOf('"', q + 1);
  }
  return -1;
}

/** The largest array index (V8 lists such keys of an object first, in numeric order). */
const MAX_INDEX = 4294967294;
const INDEX_KEY = /^(?:0|[1-9]\d{0,9})$/;
/** `key` (its JSON text without the quotes) as an array index, or -1. */
function arrayIndexOf(raw: string): number {
  const first = raw.charCodeAt(0);
  if (!(first >= 0x30 && first <= 0x39) || !INDEX_KEY.test(raw)) return -1;
  const n = Number(raw);
  return n <= MAX_INDEX ? n : -1;
}

/** Members of an object from the first member with an array-index key on: where each one's slots start. */
interface Block {
  readonly index: number;
  readonly out: number;
  readonly child: number;
}

/** An open object or array of the scan (one per depth, reused). */
interface Frame {
  isArray: boolean;
  start: number;
  startByte: number;
  /** Slots found before this value began. */
  outLen: number;
  count: number;
  /** An object whose first key is a part marker: a reference if it has no other. */
  markerFirst: boolean;
  /** No candidate inside (the root's `integrity`). */
  quiet: boolean;
  /** The member being read is quiet. */
  memberQuiet: boolean;
  expectKey: boolean;
  children: TextSlot[];
  items: number[];
  itemStarts: number[];
  blocks: Block[] | undefined;
}

const newFrame = (): Frame => ({
  isArray: false,
  start: 0,
  startByte: 0,
  outLen: 0,
  count: 0,
  markerFirst: false,
  quiet: false,
  memberQuiet: false,
  expectKey: false,
  children: [],
  items: [],
  itemStarts: [],
  blocks: undefined,
});

/** What a scan finds: the candidates in the object splitter's order, the root's own, and the document's size. */
interface Scan {
  readonly slots: TextSlot[];
  readonly root: TextSlot;
  readonly bytes: number;
}

/**
 * The scan's state between tokens. The per-character state (the UTF-8 offset, whether a
 * string or another scalar is being read) lives in locals of {@link scanSegment} while it
 * runs and is stored here between segments: the hot loop touches no object per character.
 */
interface ScanState {
  readonly maxBytes: number;
  /** The candidates found so far, in the object splitter's order. */
  readonly out: TextSlot[];
  readonly frames: Frame[];
  /** Index of the innermost open frame. */
  depth: number;
  /** UTF-8 offset of the scan. */
  byte: number;
  /** The first string over `maxBytes` (outside a part reference). */
  tooLong: { bytes: number; at: number } | undefined;
  root: TextSlot | undefined;
  // A token being read: a string (key or value) or another scalar.
  inString: boolean;
  stringIsKey: boolean;
  tokenStart: number;
  tokenStartByte: number;
  /** The key being read; `undefined` once a segment cut it. */
  keyText: string | undefined;
  inScalar: boolean;
}

/**
 * Measures every value of the canonical text `t` in one pass and collects the candidates as
 * the object splitter's `measure` does, in the order its walk of the parsed document finishes
 * them (an object's array-index keys first, as V8 enumerates them). Throws `checkpoint_too_large`
 * for a string that alone is over `maxBytes`.
 */
function scan(t: Segmented, maxBytes: number): Scan {
  const st: ScanState = {
    maxBytes,
    out: [],
    frames: [],
    depth: -1,
    byte: 0,
    tooLong: undefined,
    root: undefined,
    inString: false,
    stringIsKey: false,
    tokenStart: 0,
    tokenStartByte: 0,
    keyText: undefined,
    inScalar: false,
  };
  for (let si = 0; si < t.segments.length; si++) scanSegment(st, t.segments[si]!, t.starts[si]!, t.ascii[si]!);
  const { root } = st;
  if (!root || st.depth !== -1 || st.inString || st.inScalar) throw new Error('split-text: the text is not one JSON object');
  if (st.tooLong) throw valueTooLarge(st.tooLong.bytes, maxBytes);
  return { slots: st.out, root, bytes: root.bytes };
}

/** Scans one segment `s` of the text, which starts at offset `base` (`ascii`: it has no other character). */
function scanSegment(st: ScanState, s: string, base: number, ascii: boolean): void {
  let byte = st.byte;
  let inString = st.inString;
  let inScalar = st.inScalar;
  let i = 0;
  while (i < s.length) {
    if (inString) {
      const from = i;
      const q = closingQuote(s, from);
      const stop = q < 0 ? s.length : q;
      byte += ascii ? stop - from : utf8Count(s, from, stop);
      if (q < 0) {
        if (st.stringIsKey) st.keyText = undefined; // a key cut by a segment: no key savepoint looks for is
        i = s.length;
        continue;
      }
      byte++;
      i = q + 1;
      inString = false;
      stringEnded(st, s, from, q, base + i, byte);
      continue;
    }
    const c = s.charCodeAt(i);
    if (inScalar) {
      if (c !== 0x2c && c !== 0x5d && c !== 0x7d) {
        i++;
        byte++;
        continue;
      }
      inScalar = false;
      ended(st, byte - st.tokenStartByte, undefined); // numbers, true, false, null: never 256 bytes
    }
    switch (c) {
      case 0x7b: // {
      case 0x5b: // [
        open(st, c === 0x5b, base + i, byte);
        i++;
        byte++;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        i++;
        byte++;
        close(st, base + i, byte);
        break;
      case 0x2c: // ,
        i++;
        byte++;
        if (!st.frames[st.depth]!.isArray) st.frames[st.depth]!.expectKey = true;
        break;
      case 0x3a: // :
        i++;
        byte++;
        break;
      case 0x22: {
        const f = st.frames[st.depth]!;
        st.stringIsKey = !f.isArray && f.expectKey;
        if (!st.stringIsKey) valueStarts(st, base + i);
        st.keyText = '';
        inString = true;
        st.tokenStart = base + i;
        st.tokenStartByte = byte;
        i++;
        byte++;
        break;
      }
      default:
        valueStarts(st, base + i);
        inScalar = true;
        st.tokenStart = base + i;
        st.tokenStartByte = byte;
        i++;
        byte++;
    }
  }
  st.byte = byte;
  st.inString = inString;
  st.inScalar = inScalar;
}

/** A value starts at `at` in the innermost frame (an array records where each item starts). */
function valueStarts(st: ScanState, at: number): void {
  const f = st.frames[st.depth]!;
  if (f.isArray) f.itemStarts.push(at);
}

/** A value of `bytes` ended inside the innermost frame (`slot`: its candidate, if it is one). */
function ended(st: ScanState, bytes: number, slot: TextSlot | undefined): void {
  const f = st.frames[st.depth]!;
  f.count++;
  if (f.isArray) f.items.push(bytes);
  if (slot) f.children.push(slot);
}

/** The string token whose text in `s` runs from `from` to its closing quote at `q` ended at `end` (UTF-8 offset `byte`): a key or a value. */
function stringEnded(st: ScanState, s: string, from: number, q: number, end: number, byte: number): void {
  if (st.stringIsKey) {
    if (st.keyText !== undefined) st.keyText = s.slice(from, q);
    endKey(st);
  } else endString(st, end, byte);
}

/** A string value ended at `end` (UTF-8 offset `byte`). */
function endString(st: ScanState, end: number, byte: number): void {
  const bytes = byte - st.tokenStartByte;
  if (st.frames[st.depth]!.memberQuiet) {
    ended(st, bytes, undefined);
    return;
  }
  if (bytes > st.maxBytes && st.tooLong === undefined) st.tooLong = { bytes, at: st.tokenStart };
  let slot: TextSlot | undefined;
  if (bytes >= MIN_MOVE) {
    slot = { start: st.tokenStart, end, bytes, current: bytes, children: [], dead: false, isArray: false, touched: false };
    st.out.push(slot);
  }
  ended(st, bytes, slot);
}

/** An object's key ended: what the member after it is (quiet, a part marker, an array index that reorders the members). */
function endKey(st: ScanState): void {
  const f = st.frames[st.depth]!;
  f.expectKey = false;
  const raw = st.keyText;
  if (f.count === 0) f.markerFirst = raw === PART_MARKER || raw === PARTS_MARKER;
  f.memberQuiet = f.quiet || (st.depth === 0 && raw === 'integrity');
  const index = raw === undefined ? -1 : arrayIndexOf(raw);
  if (index >= 0 || f.blocks) {
    f.blocks ??= [{ index: -1, out: f.outLen, child: 0 }]; // the members before
    f.blocks.push({ index, out: st.out.length, child: f.children.length });
  }
}

/** An object or array opens at `at` (UTF-8 offset `byte`): the next frame is reset for it. */
function open(st: ScanState, isArray: boolean, at: number, byte: number): void {
  const parentQuiet = st.depth >= 0 && st.frames[st.depth]!.memberQuiet;
  if (st.depth >= 0) valueStarts(st, at);
  st.depth++;
  const f = (st.frames[st.depth] ??= newFrame());
  f.isArray = isArray;
  f.start = at;
  f.startByte = byte;
  f.outLen = st.out.length;
  f.count = 0;
  f.markerFirst = false;
  f.quiet = parentQuiet;
  f.memberQuiet = parentQuiet;
  f.expectKey = !isArray;
  f.blocks = undefined;
}

/** The innermost object or array closes at `end` (UTF-8 offset `byte`): it becomes a candidate, the root, or hands its candidates up. */
function close(st: ScanState, end: number, byte: number): void {
  const { out } = st;
  const f = st.frames[st.depth]!;
  const bytes = byte - f.startByte;
  if (f.blocks) reorder(f, out);
  let slot: TextSlot | undefined;
  if (!f.isArray && f.count === 1 && f.markerFirst) {
    // A part reference in the payload itself: nothing inside it is a candidate, nor is it.
    out.length = f.outLen;
    f.children.length = 0;
    if (st.tooLong && st.tooLong.at >= f.start) st.tooLong = undefined;
  } else if (!f.quiet && st.depth > 0 && bytes >= MIN_MOVE) {
    // Item sizes only matter to an array too large for one part (it may be cut into chunks): a
    // smaller one's lists are reused by the next array at this depth, not kept (a list of
    // small records: one number per record).
    const chunkable = f.isArray && bytes > st.maxBytes;
    slot = {
      start: f.start,
      end,
      bytes,
      current: bytes,
      children: f.children,
      dead: false,
      isArray: f.isArray,
      touched: false,
      ...(chunkable ? { items: f.items, itemStarts: f.itemStarts } : {}),
    };
    for (const child of f.children) child.up = slot;
    out.push(slot);
    f.children = [];
    if (chunkable) {
      f.items = [];
      f.itemStarts = [];
    }
  }
  if (st.depth === 0) {
    st.root = { start: f.start, end, bytes, current: bytes, children: f.children, dead: false, isArray: false, touched: true };
    st.depth--;
    return;
  }
  const kids = slot ? undefined : f.children;
  st.depth--;
  ended(st, bytes, slot);
  if (kids) {
    const p = st.frames[st.depth]!;
    for (const child of kids) p.children.push(child); // not a spread: there may be 100k+
    kids.length = 0;
  }
  f.items.length = 0;
  f.itemStarts.length = 0;
}

/**
 * Puts the slots of an object's members in the order V8 enumerates the members of its parse:
 * array-index keys first, by number, then the others in text order (the object splitter's
 * walk meets them so, and ties among equal sizes go by that order).
 */
function reorder(f: Frame, out: TextSlot[]): void {
  const blocks = f.blocks!;
  if (out.length === f.outLen) return;
  const order = blocks.map((b, n) => ({
    b,
    n,
    outEnd: blocks[n + 1]?.out ?? out.length,
    childEnd: blocks[n + 1]?.child ?? f.children.length,
  }));
  order.sort((x, y) => (x.b.index < 0 ? 1 : 0) - (y.b.index < 0 ? 1 : 0) || (x.b.index >= 0 ? x.b.index - y.b.index : x.n - y.n));
  const slots: TextSlot[] = [];
  const children: TextSlot[] = [];
  for (const { b, outEnd, childEnd } of order) {
    for (let k = b.out; k < outEnd; k++) slots.push(out[k]!);
    for (let k = b.child; k < childEnd; k++) children.push(f.children[k]!);
  }
  out.length = f.outLen;
  for (const s of slots) out.push(s);
  f.children.length = 0;
  for (const c of children) f.children.push(c);
}

/** Encodes the text from `from` to `to` into `into` at `at`; returns where it ended. */
function encodeRange(t: Segmented, from: number, to: number, into: Uint8Array, at: number): number {
  if (from >= to) return at;
  let lo = 0;
  let hi = t.starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (t.starts[mid]! <= from) lo = mid;
    else hi = mid - 1;
  }
  for (let k = lo; k < t.segments.length && t.starts[k]! < to; k++) {
    const s = t.segments[k]!;
    const a = Math.max(0, from - t.starts[k]!);
    const b = Math.min(s.length, to - t.starts[k]!);
    // A slice of a flat string is a view in V8, not a copy.
    const { read, written } = utf8EncodeInto(a === 0 && b === s.length ? s : s.slice(a, b), into.subarray(at));
    if (read !== b - a) throw new Error('split-text: a part is longer than measured');
    at += written;
  }
  return at;
}

/** The UTF-8 of `slot`'s value as it is now: its span, with the references of the values moved out of it in their place. */
function currentBytes(t: Segmented, slot: TextSlot, size: number): Uint8Array {
  const into = new Uint8Array(size);
  let at = 0;
  const walk = (n: TextSlot): void => {
    let pos = n.start;
    let kids = n.children;
    for (let k = 1; k < kids.length; k++) {
      if (kids[k - 1]!.start > kids[k]!.start) {
        kids = [...kids].sort((x, y) => x.start - y.start); // an object with array-index keys
        break;
      }
    }
    for (const c of kids) {
      if (c.ref === undefined && !c.touched) continue;
      at = encodeRange(t, pos, c.start, into, at);
      if (c.ref !== undefined) at += utf8EncodeInto(c.ref, into.subarray(at)).written;
      else walk(c);
      pos = c.end;
    }
    at = encodeRange(t, pos, n.end, into, at);
  };
  walk(slot);
  if (at !== size) throw new Error('split-text: a part is shorter than measured');
  return into;
}

/** The UTF-8 of `[` items `from` to `to` of an array slot nothing moved out of `]`. */
function chunkBytes(t: Segmented, slot: TextSlot, from: number, to: number): Uint8Array {
  const items = slot.items!;
  const starts = slot.itemStarts!;
  let size = 2 + (to - from - 1);
  for (let k = from; k < to; k++) size += items[k]!;
  const into = new Uint8Array(size);
  into[0] = 0x5b;
  const end = to < starts.length ? starts[to]! - 1 : slot.end - 1; // before the comma, or the `]`
  const at = encodeRange(t, starts[from]!, end, into, 1);
  into[at] = 0x5d;
  if (at + 1 !== size) throw new Error('split-text: a chunk is not the size measured');
  return into;
}

/**
 * Splits the document whose canonical JSON text is `segments` (see the module's comment) as
 * {@link splitDocument} splits its parse: the same main document's bytes and the same parts.
 * Throws `checkpoint_too_large` as it does.
 */
export async function splitCanonicalText(
  segments: readonly string[],
  maxBytes: number,
  partKey: (n: number) => string,
): Promise<{ main: Uint8Array; parts: PartFile[] }> {
  const t = segmented(segments);
  const { slots, root, bytes } = scan(t, maxBytes);
  const { parts, mainBytes } = await moveLargestFirst(slots, bytes, maxBytes, partKey, {
    bytesOf: (slot) => currentBytes(t, slot, slot.current),
    chunkBytesOf: (slot, from, to) => chunkBytes(t, slot, from, to),
    place: (slot, _replacement, text) => {
      slot.ref = text;
      for (let a = slot.up; a; a = a.up) a.touched = true;
      killSlots(slot);
    },
  });
  if (mainBytes > maxBytes) throw mainTooLarge(mainBytes, maxBytes);
  return { main: currentBytes(t, root, mainBytes), parts };
}
