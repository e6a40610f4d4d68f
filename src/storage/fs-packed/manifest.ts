/**
 * The manifest of a packed store: which segments hold its records, in order.
 *
 *   <dir>/.sp\packed\manifest        {"format":1,"generation":<n>,"segments":[{"id":<n>,"length":<bytes>},…,{"id":<n>}]}
 *   <dir>/.sp\packed\seg-<id>         a segment (id in 10 decimal digits)
 *   <dir>/.sp\packed\manifest-<tag>   a manifest being written (a leftover if a crash caught it)
 *
 * Canonical JSON (keys in this order, no spaces). The last segment is the active one (appended
 * to; no `length`); earlier ones are sealed at `length`: bytes past it were never acknowledged and
 * are ignored. The manifest is rewritten only on rotation, compaction and lock break: a temp file
 * written, fsynced, renamed over `manifest`, the directory fsynced — so a crash leaves either the
 * old manifest or the new one, and every rewrite changes its inode (how a reader notices it).
 * Segment names the manifest does not hold are leftovers of a crashed rotation or compaction,
 * removed by the next lock holder. (Names starting `.sp\` are internal to fsStorage.)
 */
import { CheckpointError } from '../../contract/errors.js';
import { INTERNAL_MARK } from '../fs/names.js';
import type { PackedIo } from './io.js';
import { replaceViaTemp, tempNameOf } from './replace.js';

export const PACKED_PREFIX = `${INTERNAL_MARK}packed\\`;
export const MANIFEST_NAME = `${PACKED_PREFIX}manifest`;
const SEGMENT_PREFIX = `${PACKED_PREFIX}seg-`;
const MANIFEST_TEMP_PREFIX = `${PACKED_PREFIX}manifest-`;

export interface ManifestSegment {
  readonly id: number;
  /** Where a sealed segment's valid records end; absent for the active (last) one. */
  readonly length?: number;
}

export interface Manifest {
  readonly generation: number;
  readonly segments: readonly ManifestSegment[];
}

export const segmentName = (id: number): string => `${SEGMENT_PREFIX}${String(id).padStart(10, '0')}`;

/** The id of a segment's file name, or undefined for any other name. */
export function segmentIdOf(name: string): number | undefined {
  if (!name.startsWith(SEGMENT_PREFIX)) return undefined;
  const digits = name.slice(SEGMENT_PREFIX.length);
  return /^\d{10}$/.test(digits) ? Number(digits) : undefined;
}

export const isManifestTemp = (name: string): boolean => name.startsWith(MANIFEST_TEMP_PREFIX);

export function encodeManifest(manifest: Manifest): string {
  const segments = manifest.segments.map((s) => (s.length === undefined ? `{"id":${s.id}}` : `{"id":${s.id},"length":${s.length}}`));
  return `{"format":1,"generation":${manifest.generation},"segments":[${segments.join(',')}]}`;
}

function damaged(dir: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_integrity_mismatch', `packed store ${dir}: manifest ${why}`, {
    details: { reason: 'packed_manifest' },
  });
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** The manifest in `text`, checked (a damaged one is refused: it is only ever replaced whole by rename). */
export function parseManifest(dir: string, text: string): Manifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw damaged(dir, 'is not JSON');
  }
  const m = value as { format?: unknown; generation?: unknown; segments?: unknown };
  if (m === null || typeof m !== 'object') throw damaged(dir, 'is not an object');
  if (m.format !== 1) throw damaged(dir, `has format ${JSON.stringify(m.format)}, this version reads format 1`);
  if (!isCount(m.generation) || !Array.isArray(m.segments) || m.segments.length === 0) throw damaged(dir, 'has no segments');
  const segments = (m.segments as { id?: unknown; length?: unknown }[]).map((s, i, all): ManifestSegment => {
    if (s === null || typeof s !== 'object' || !isCount(s.id)) throw damaged(dir, 'names a segment without an id');
    const last = i === all.length - 1;
    if (last) return { id: s.id };
    if (!isCount(s.length)) throw damaged(dir, `has sealed segment ${s.id} without a length`);
    return { id: s.id, length: s.length };
  });
  return { generation: m.generation, segments };
}

/**
 * Replaces `dir`'s manifest by `manifest`, durably: temp file, fsync, rename, directory fsync.
 * `fence` runs just before the rename and throws when the writer may no longer replace it (its
 * lease of the lock ran out: another process may own the manifest now).
 */
export async function writeManifest(io: PackedIo, dir: string, manifest: Manifest, fence?: () => void): Promise<void> {
  const data = Buffer.from(encodeManifest(manifest), 'utf8');
  await replaceViaTemp(io, dir, data, { name: MANIFEST_NAME, temp: tempNameOf(MANIFEST_TEMP_PREFIX), durable: true, fence });
}
