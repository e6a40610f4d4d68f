/**
 * The records of a packed segment (pure encoding, no I/O). A record is one call's operations,
 * applied all or none: a `put` is a record of one put, a `batch` one record of all its puts and
 * deletes (its checks are not written: they are decided before the record is).
 *
 *   record  = magic u32 | payloadBytes u32 | crc32(payload) u32 | payload
 *   payload = count u32 | op*
 *   op      = kind u8 (1 put, 2 delete) | keyBytes u32 | key (UTF-8) [| valueBytes u32 | value]
 *
 * Nothing in a record depends on where it lands in the file: a value's version is made from its
 * record's offset when the record is placed (see {@link versionAt}), so a record is encoded when
 * its call is made (the caller may reuse its buffer at once) and placed later, in a group.
 */
import { crc32 } from 'node:zlib';

const MAGIC = 0x53504b31; // "SPK1"
export const HEADER_BYTES = 12;
const PUT = 1;
const DELETE = 2;

/** One operation a record carries. */
export type RecordOp =
  { readonly kind: 'put'; readonly key: string; readonly bytes: Uint8Array } | { readonly kind: 'delete'; readonly key: string };

/** An encoded record, and where each put's value sits in it (undefined for a delete). */
export interface EncodedRecord {
  readonly bytes: Buffer;
  readonly valueAt: readonly (number | undefined)[];
  /** Each put's value length, as copied (undefined for a delete). */
  readonly valueLength: readonly (number | undefined)[];
}

const encoder = new TextEncoder();

/** The record of `ops`, copying every value. */
export function encodeRecord(ops: readonly RecordOp[]): EncodedRecord {
  const keys = ops.map((op) => encoder.encode(op.key));
  let size = HEADER_BYTES + 4;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    size += 5 + keys[i]!.length + (op.kind === 'put' ? 4 + op.bytes.length : 0);
  }
  const out = Buffer.allocUnsafe(size);
  const valueAt: (number | undefined)[] = [];
  const valueLength: (number | undefined)[] = [];
  out.writeUInt32LE(ops.length, HEADER_BYTES);
  let at = HEADER_BYTES + 4;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    out[at] = op.kind === 'put' ? PUT : DELETE;
    out.writeUInt32LE(keys[i]!.length, at + 1);
    out.set(keys[i]!, at + 5);
    at += 5 + keys[i]!.length;
    if (op.kind === 'put') {
      out.writeUInt32LE(op.bytes.length, at);
      out.set(op.bytes, at + 4);
      valueAt.push(at + 4);
      valueLength.push(op.bytes.length);
      at += 4 + op.bytes.length;
    } else {
      valueAt.push(undefined);
      valueLength.push(undefined);
    }
  }
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(size - HEADER_BYTES, 4);
  out.writeUInt32LE(crc32(out.subarray(HEADER_BYTES)), 8);
  return { bytes: out, valueAt, valueLength };
}

/** The version of the value an operation of the record at `recordOffset` stores: new for every placed record, never reused in a segment. */
export const versionAt = (recordOffset: number, op: number): string => `${recordOffset.toString(36)}.${op}`;

/** A put or delete read back from a segment, with the value's place in the file. */
export type ScannedOp =
  | { readonly kind: 'put'; readonly key: string; readonly offset: number; readonly length: number; readonly version: string }
  | { readonly kind: 'delete'; readonly key: string };

/** The records of a segment's bytes, up to the first that is incomplete or damaged (a torn tail), and where they end. */
export function scanSegment(data: Buffer, base = 0): { readonly ops: ScannedOp[]; readonly end: number } {
  const ops: ScannedOp[] = [];
  let at = 0;
  for (;;) {
    const record = readRecord(data, at, base);
    if (!record) return { ops, end: base + at };
    ops.push(...record.ops);
    at = record.end;
  }
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The record at `at`, or undefined when there is none whole and intact. */
function readRecord(data: Buffer, at: number, base: number): { ops: ScannedOp[]; end: number } | undefined {
  if (at + HEADER_BYTES > data.length || data.readUInt32LE(at) !== MAGIC) return undefined;
  const end = at + HEADER_BYTES + data.readUInt32LE(at + 4);
  if (end > data.length || crc32(data.subarray(at + HEADER_BYTES, end)) !== data.readUInt32LE(at + 8)) return undefined;
  const count = data.readUInt32LE(at + HEADER_BYTES);
  const ops: ScannedOp[] = [];
  let p = at + HEADER_BYTES + 4;
  for (let i = 0; i < count; i++) {
    const kind = data[p];
    const keyBytes = data.readUInt32LE(p + 1);
    const key = decoder.decode(data.subarray(p + 5, p + 5 + keyBytes));
    p += 5 + keyBytes;
    if (kind === PUT) {
      const length = data.readUInt32LE(p);
      ops.push({ kind: 'put', key, offset: base + p + 4, length, version: versionAt(base + at, i) });
      p += 4 + length;
    } else ops.push({ kind: 'delete', key });
  }
  return { ops, end };
}
