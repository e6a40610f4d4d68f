/**
 * The hint: a snapshot of the index over a prefix of sealed segments, so that opening scans only
 * the segments after it (the active one, usually) instead of every byte of the store.
 *
 *   <dir>/.sp\packed\hint          magic u32 | crc32(body) u32 | body
 *   <dir>/.sp\packed\hint-<tag>    a hint being written (a leftover if a crash caught it)
 *   body    = segmentCount u32 | (id u64 | length u64)* | maxSequence u64 | entryCount u32 | entry*
 *   entry   = keyBytes u32 | key (UTF-8) | segment index u32 | offset u64 | length u32 | sequence u64
 *
 * It holds the entries of the index that point into those segments, and the highest sequence they
 * hold. Sealed segments never change, and every later segment is scanned on open (its puts and
 * deletes win over the hint's entries, as they win over the records they copy): so a hint is
 * right whenever the segments it names are the first of the manifest with the same lengths, and
 * ignored otherwise (after a compaction replaced them) or when its CRC fails (a torn or partial
 * file after a crash). It is only ever an optimisation: written after a rotation or compaction,
 * temp file then rename, without fsync, and a failure to write it fails nothing.
 */
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { readWholeFile, type PackedIo } from './io.js';
import { PACKED_PREFIX, type ManifestSegment } from './manifest.js';
import { replaceViaTemp, tempNameOf } from './replace.js';
import type { PackedState, Segment } from './state.js';

export const HINT_NAME = `${PACKED_PREFIX}hint`;
const HINT_TEMP_PREFIX = `${PACKED_PREFIX}hint-`;
const HINT_MAGIC = 0x48504b53; // "SKPH"

export const isHintTemp = (name: string): boolean => name.startsWith(HINT_TEMP_PREFIX);

/** One index entry as the hint holds it. */
export interface HintEntry {
  readonly key: string;
  readonly segment: number;
  readonly offset: number;
  readonly length: number;
  readonly sequence: number;
}

export interface Hint {
  readonly segments: readonly { readonly id: number; readonly length: number }[];
  readonly maxSequence: number;
  readonly entries: readonly HintEntry[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The hint of `state`'s sealed segments (undefined when there are none). */
export function hintOf(state: PackedState): Buffer | undefined {
  const sealed = state.segments.filter((s) => s.sealed);
  if (sealed.length === 0) return undefined;
  const at = new Map<Segment, number>(sealed.map((s, i) => [s, i]));
  const entries: { key: Uint8Array; segment: number; offset: number; length: number; sequence: number }[] = [];
  let size = 8 + 4 + 16 * sealed.length + 8 + 4;
  for (const [key, entry] of state.index) {
    const segment = at.get(entry.segment);
    if (segment === undefined) continue;
    const bytes = encoder.encode(key);
    entries.push({ key: bytes, segment, offset: entry.offset, length: entry.length, sequence: entry.sequence });
    size += 4 + bytes.length + 24;
  }
  const out = Buffer.allocUnsafe(size);
  let p = 8;
  p = out.writeUInt32LE(sealed.length, p);
  for (const s of sealed) p = out.writeBigUInt64LE(BigInt(s.end), out.writeBigUInt64LE(BigInt(s.id), p));
  p = out.writeBigUInt64LE(BigInt(Math.max(0, ...sealed.map((s) => s.maxSequence))), p);
  p = out.writeUInt32LE(entries.length, p);
  for (const e of entries) {
    p = out.writeUInt32LE(e.key.length, p);
    out.set(e.key, p);
    p = out.writeUInt32LE(e.segment, p + e.key.length);
    p = out.writeBigUInt64LE(BigInt(e.offset), p);
    p = out.writeUInt32LE(e.length, p);
    p = out.writeBigUInt64LE(BigInt(e.sequence), p);
  }
  out.writeUInt32LE(HINT_MAGIC, 0);
  out.writeUInt32LE(crc32(out.subarray(8)), 4);
  return out;
}

/** The hint in `data`, or undefined when it is damaged (a crash caught its write). */
export function parseHint(data: Buffer): Hint | undefined {
  if (data.length < 8 || data.readUInt32LE(0) !== HINT_MAGIC || crc32(data.subarray(8)) !== data.readUInt32LE(4)) return undefined;
  try {
    let p = 8;
    const segments: { id: number; length: number }[] = [];
    const count = data.readUInt32LE(p);
    p += 4;
    for (let i = 0; i < count; i++, p += 16)
      segments.push({ id: Number(data.readBigUInt64LE(p)), length: Number(data.readBigUInt64LE(p + 8)) });
    const maxSequence = Number(data.readBigUInt64LE(p));
    const entryCount = data.readUInt32LE(p + 8);
    p += 12;
    const entries: HintEntry[] = [];
    for (let i = 0; i < entryCount; i++) {
      const keyBytes = data.readUInt32LE(p);
      const key = decoder.decode(data.subarray(p + 4, p + 4 + keyBytes));
      p += 4 + keyBytes;
      const segment = data.readUInt32LE(p);
      if (segment >= segments.length) return undefined;
      entries.push({
        key,
        segment,
        offset: Number(data.readBigUInt64LE(p + 4)),
        length: data.readUInt32LE(p + 12),
        sequence: Number(data.readBigUInt64LE(p + 16)),
      });
      p += 24;
    }
    return { segments, maxSequence, entries };
  } catch {
    return undefined;
  }
}

/** How many of the manifest's first segments the hint covers (0: it does not fit, scan everything). */
export function hintCoverage(hint: Hint, manifest: readonly ManifestSegment[]): number {
  if (hint.segments.length >= manifest.length) return 0;
  for (let i = 0; i < hint.segments.length; i++) {
    const s = manifest[i]!;
    if (s.id !== hint.segments[i]!.id || s.length !== hint.segments[i]!.length) return 0;
  }
  return hint.segments.length;
}

/** The hint of `dir`, or undefined when there is none or it is damaged. */
export async function readHint(io: PackedIo, dir: string): Promise<Hint | undefined> {
  const bytes = await readWholeFile(io, join(dir, HINT_NAME));
  return bytes === undefined ? undefined : parseHint(bytes);
}

/** Replaces the hint by `state`'s (no fsync: a hint lost or torn by a crash is ignored); a failure is ignored too. */
export async function writeHint(state: PackedState): Promise<void> {
  const data = hintOf(state);
  if (!data) return;
  const temp = tempNameOf(HINT_TEMP_PREFIX);
  try {
    await replaceViaTemp(state.io, state.dir, data, { name: HINT_NAME, temp, durable: false });
  } catch {
    await state.io.unlink(join(state.dir, temp)).catch(() => undefined);
  }
}
