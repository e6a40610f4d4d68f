/**
 * The records of a packed segment, format 1 (pure encoding, no I/O). A record is one call's
 * operations, applied all or none: a `put` is a record of one put, a `batch` one record of all its
 * puts and deletes (its checks are not written: they are decided before the record is).
 *
 *   record  = header | payload
 *   header  = magic u32 | payloadBytes u32 | firstSequence u64 | crc32(payload) u32 | crc32(header[0..20)) u32
 *   payload = count u32 | op*
 *   op      = 1 (put)    u8 | keyBytes u32 | key (UTF-8) | valueBytes u32 | value
 *           | 2 (delete) u8 | keyBytes u32 | key (UTF-8)
 *           | 3 (copy)   u8 | keyBytes u32 | key (UTF-8) | sequence u64 | valueBytes u32 | value
 *
 * All integers little-endian. Op i of a record whose first sequence is s has sequence s + i (puts
 * and deletes); a copy (written by compaction) carries the sequence of the put it copies, so a
 * value keeps its version. A put's version is its sequence in base 36. The header of a record of
 * copies holds the highest sequence the segments it replaces held (deletes included), so that the
 * next sequence never goes back once compaction dropped them.
 *
 * The payload and its CRC are made when the call is made (the caller may reuse its buffers at
 * once); the sequence and the header's CRC when the record is placed in a group ({@link placeRecord}).
 * Scanning stops at the first record that is incomplete or fails a CRC: a torn tail, or the
 * written zeros that follow the last record of a preallocated active segment.
 */
import { crc32 } from 'node:zlib';

export const MAGIC = 0x53504b32; // "2KPS" read as bytes: the packed store's format 1
export const HEADER_BYTES = 24;
const PUT = 1;
const DELETE = 2;
const COPY = 3;

/** One operation a record carries. */
export type RecordOp =
  | { readonly kind: 'put'; readonly key: string; readonly bytes: Uint8Array }
  | { readonly kind: 'delete'; readonly key: string }
  | { readonly kind: 'copy'; readonly key: string; readonly sequence: number; readonly bytes: Uint8Array };

/** An encoded record (header not yet placed), and where each op's value sits in it (undefined for a delete). */
export interface EncodedRecord {
  readonly bytes: Buffer;
  readonly valueAt: readonly (number | undefined)[];
  /** Each op's value length, as copied (undefined for a delete). */
  readonly valueLength: readonly (number | undefined)[];
  /** How many sequences placing it takes: its puts and deletes (copies carry their own). */
  readonly sequences: number;
}

function opBytes(op: RecordOp, keyBytes: number): number {
  if (op.kind === 'delete') return 5 + keyBytes;
  return 5 + keyBytes + (op.kind === 'copy' ? 8 : 0) + 4 + op.bytes.length;
}

/**
 * The record of `ops`, copying every value; its payload CRC made now, its header's sequence left for {@link placeRecord}.
 * Keys are written as UTF-8 straight into the record, with no intermediate array for each.
 */
export function encodeRecord(ops: readonly RecordOp[]): EncodedRecord {
  const keyBytes = ops.map((op) => Buffer.byteLength(op.key, 'utf8'));
  let size = HEADER_BYTES + 4;
  for (let i = 0; i < ops.length; i++) size += opBytes(ops[i]!, keyBytes[i]!);
  const out = Buffer.allocUnsafe(size);
  const valueAt: (number | undefined)[] = [];
  const valueLength: (number | undefined)[] = [];
  let sequences = 0;
  out.writeUInt32LE(ops.length, HEADER_BYTES);
  let at = HEADER_BYTES + 4;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    out[at] = op.kind === 'put' ? PUT : op.kind === 'delete' ? DELETE : COPY;
    out.writeUInt32LE(keyBytes[i]!, at + 1);
    out.write(op.key, at + 5, keyBytes[i]!, 'utf8');
    at += 5 + keyBytes[i]!;
    if (op.kind === 'delete') {
      valueAt.push(undefined);
      valueLength.push(undefined);
      sequences++;
      continue;
    }
    if (op.kind === 'copy') {
      out.writeBigUInt64LE(BigInt(op.sequence), at);
      at += 8;
    } else sequences++;
    out.writeUInt32LE(op.bytes.length, at);
    out.set(op.bytes, at + 4);
    valueAt.push(at + 4);
    valueLength.push(op.bytes.length);
    at += 4 + op.bytes.length;
  }
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(size - HEADER_BYTES, 4);
  out.writeUInt32LE(crc32(out.subarray(HEADER_BYTES)), 16);
  return { bytes: out, valueAt, valueLength, sequences };
}

/** Writes the record's first sequence and the header's CRC (when its group is formed). */
export function placeRecord(record: EncodedRecord, firstSequence: number): void {
  // Two u32 halves: a u64 without a BigInt (sequences stay below 2^53).
  record.bytes.writeUInt32LE(firstSequence % 0x1_0000_0000, 8);
  record.bytes.writeUInt32LE(Math.floor(firstSequence / 0x1_0000_0000), 12);
  record.bytes.writeUInt32LE(crc32(record.bytes.subarray(0, 20)), 20);
}

/** The version of the put whose sequence is `sequence`. */
export const versionOf = (sequence: number): string => sequence.toString(36);

/** A put, copy or delete read back from a segment, with the value's place in the segment and its sequence. */
export type ScannedOp =
  | { readonly kind: 'put'; readonly key: string; readonly offset: number; readonly length: number; readonly sequence: number }
  | { readonly kind: 'delete'; readonly key: string; readonly sequence: number };

/** What scanning a segment's bytes found: its ops in order, where its intact records end, and the highest sequence seen (0: none). */
export interface ScannedSegment {
  readonly ops: ScannedOp[];
  readonly end: number;
  readonly maxSequence: number;
}

/**
 * The records of a segment's bytes from `from` (a record's start), up to the first that is
 * incomplete or damaged (a torn tail). Offsets are in `data`'s terms plus `base` (where `data`
 * begins in the segment), so a tail read from the middle of a segment scans in place.
 */
export function scanSegment(data: Buffer, base = 0): ScannedSegment {
  const ops: ScannedOp[] = [];
  let at = 0;
  let maxSequence = 0;
  for (;;) {
    const record = readRecord(data, at, base, ops);
    if (!record) return { ops, end: base + at, maxSequence };
    if (record.maxSequence > maxSequence) maxSequence = record.maxSequence;
    at = record.end;
  }
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The length of the record whose header starts at `at` (header and payload), or undefined when
 * no intact header is there: too few bytes, another magic, or a header CRC that fails. Written
 * zeros (a preallocated segment's space past its last record) are never a header: their magic is 0.
 */
export function recordBytesAt(data: Buffer, at: number): number | undefined {
  if (at + HEADER_BYTES > data.length) return undefined;
  if (data.readUInt32LE(at) !== MAGIC || crc32(data.subarray(at, at + 20)) !== data.readUInt32LE(at + 20)) return undefined;
  return HEADER_BYTES + data.readUInt32LE(at + 4);
}

/** Whether the bytes of `data` from `at` (at most a header's worth) are all zero: written zeros, or the data's end. */
export function zerosAt(data: Uint8Array, at: number): boolean {
  const stop = Math.min(data.length, at + HEADER_BYTES);
  for (let i = at; i < stop; i++) if (data[i] !== 0) return false;
  return true;
}

/** The header's payload length and first sequence at `at`, or undefined when the header is incomplete or damaged. */
function readHeader(data: Buffer, at: number): { readonly end: number; readonly first: number } | undefined {
  const length = recordBytesAt(data, at);
  if (length === undefined) return undefined;
  const end = at + length;
  if (end > data.length || crc32(data.subarray(at + HEADER_BYTES, end)) !== data.readUInt32LE(at + 16)) return undefined;
  return { end, first: Number(data.readBigUInt64LE(at + 8)) };
}

/** Appends the ops of the record at `at` to `ops`; undefined (nothing appended) when there is none whole and intact. */
function readRecord(data: Buffer, at: number, base: number, ops: ScannedOp[]): { end: number; maxSequence: number } | undefined {
  const header = readHeader(data, at);
  if (!header) return undefined;
  const count = data.readUInt32LE(at + HEADER_BYTES);
  const found: ScannedOp[] = [];
  let maxSequence = header.first;
  let next = header.first;
  let p = at + HEADER_BYTES + 4;
  try {
    for (let i = 0; i < count; i++) {
      const kind = data[p];
      const keyBytes = data.readUInt32LE(p + 1);
      if (p + 5 + keyBytes > header.end) return undefined;
      const key = decoder.decode(data.subarray(p + 5, p + 5 + keyBytes));
      p += 5 + keyBytes;
      if (kind === DELETE) {
        found.push({ kind: 'delete', key, sequence: next++ });
        continue;
      }
      let sequence: number;
      if (kind === COPY) {
        sequence = Number(data.readBigUInt64LE(p));
        p += 8;
      } else if (kind === PUT) sequence = next++;
      else return undefined;
      const length = data.readUInt32LE(p);
      if (p + 4 + length > header.end) return undefined;
      found.push({ kind: 'put', key, offset: base + p + 4, length, sequence });
      if (sequence > maxSequence) maxSequence = sequence;
      p += 4 + length;
    }
  } catch {
    // A count or length running past the record: a CRC collision on damaged bytes, read as a torn tail.
    return undefined;
  }
  if (next - 1 > maxSequence) maxSequence = next - 1;
  for (const op of found) ops.push(op);
  return { end: header.end, maxSequence };
}
