import { z } from 'zod';
import { parseJson } from '../codec/canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { sealAroundIntegrity, sealAroundIntegrityInto, verifyDocument } from '../codec/json-document.js';
import { utf8Decode } from '../codec/utf8.js';
import { mayDifferAsJsonb } from '../codec/jsonb-refusals.js';
import { looksChunked } from '../codec/chunking.js';
import { CheckpointError } from '../contract/errors.js';
import { IntegritySchema } from '../contract/snapshot.js';
import type { StorageAdapter } from '../contract/storage.js';
import { resolveChunked } from '../snapshot-io/chunk-store.js';
import { writeText } from './serialized.js';

/** One pending write of a task, as LangGraph's serializer wrote its value (UTF-8 `text` or base64 `data`, as in `SerializedValueSchema`). */
export const StoredWriteSchema = z.union([
  z.object({ idx: z.number().int(), channel: z.string(), type: z.string().min(1), text: z.string() }).strict(),
  z.object({ idx: z.number().int(), channel: z.string(), type: z.string().min(1), data: z.string() }).strict(),
]);
/** The TypeScript type of {@link StoredWriteSchema}. */
export type StoredWrite = z.infer<typeof StoredWriteSchema>;

/**
 * The pending writes one task made against one checkpoint (`parts/<sequence>/w_<task>.json`),
 * sealed like every savepoint document.
 */
export const WritesDocumentSchema = z
  .object({
    thread_id: z.string(),
    checkpoint_ns: z.string(),
    checkpoint_id: z.string().min(1),
    task_id: z.string(),
    task_path: z.string(),
    writes: z.array(StoredWriteSchema),
    integrity: IntegritySchema,
  })
  .strict();
/** The TypeScript type of {@link WritesDocumentSchema}. */
export type WritesDocument = z.infer<typeof WritesDocumentSchema>;

/**
 * Seals and encodes a writes document: byte for byte what `sealDocumentBytes` makes of it
 * (a property test holds them equal), its canonical text built directly (every member is a
 * string, or a write made by `storedValue`). With `scratch`, a view of it when the bytes fit,
 * as `encodeCheckpointDocument` makes: for a store that copies them before its call returns.
 */
export function encodeWrites(
  document: Omit<WritesDocument, 'integrity' | 'writes'>,
  stored: readonly StoredWrite[],
  scratch?: Uint8Array,
): Uint8Array | Promise<Uint8Array> {
  return sealWrites(document, stored, scratch).bytes;
}

/** A writes document as {@link encodeWrites} seals it, and its metadata column as a store that indexes it works it out from the bytes. */
export interface SealedWrites {
  readonly bytes: Uint8Array | Promise<Uint8Array>;
  /**
   * `'{}'`: the document names no metadata (its members are fixed), and nothing in its texts can
   * make `jsonb` read it otherwise than `JSON.parse` (an escape, a number it refuses). Undefined:
   * the store decides from the bytes.
   */
  readonly metadataColumn: '{}' | undefined;
}

/** {@link encodeWrites}, with the document's metadata column (see {@link SealedWrites}). */
export function sealWrites(
  document: Omit<WritesDocument, 'integrity' | 'writes'>,
  stored: readonly StoredWrite[],
  scratch?: Uint8Array,
  metadataColumnBelow = 0,
): SealedWrites {
  const q = JSON.stringify;
  let writes = '[';
  for (let i = 0; i < stored.length; i++) writes += `${i > 0 ? ',' : ''}${writeText(stored[i]!)}`;
  const before = `{"checkpoint_id":${q(document.checkpoint_id)},"checkpoint_ns":${q(document.checkpoint_ns)},`;
  const after = `,"task_id":${q(document.task_id)},"task_path":${q(document.task_path)},"thread_id":${q(document.thread_id)},"writes":${writes}]}`;
  // The integrity member between the two holds neither an escape nor a number.
  const known = before.length + after.length < metadataColumnBelow && !mayDifferAsJsonb(before) && !mayDifferAsJsonb(after);
  const metadataColumn = known ? '{}' : undefined;
  return { bytes: (scratch && sealAroundIntegrityInto(before, after, scratch)) || sealAroundIntegrity(before, after), metadataColumn };
}

/**
 * The writes document stored as `bytes` under `key` in `storage`: reassembled from its content
 * chunks first when it was stored as an envelope (a long value, see saver-writes.ts), each chunk
 * verified against its id, then decoded as {@link decodeWrites}, which checks the seal over the
 * whole. A missing or damaged chunk is `checkpoint_integrity_mismatch`.
 */
export function decodeStoredWrites(storage: StorageAdapter, key: string, bytes: Uint8Array): Promise<WritesDocument> {
  // Not an async function: a document stored whole costs no await more than before.
  if (!looksChunked(bytes)) return decodeWrites(bytes, key);
  return resolveChunked(storage, key, bytes).then((whole) => decodeWrites(whole ?? bytes, key));
}

/** Decodes, validates and verifies a writes document; `checkpoint_schema_invalid` / `checkpoint_integrity_mismatch` otherwise. */
export async function decodeWrites(bytes: Uint8Array, where: string): Promise<WritesDocument> {
  const json = parseJson(utf8Decode(bytes, where), where);
  const parsed = WritesDocumentSchema.safeParse(json);
  if (!parsed.success) {
    throw new CheckpointError('checkpoint_schema_invalid', `${where}: not a LangGraph writes document`, { details: { where } });
  }
  await verifyDocument(json as JsonObject, where);
  return parsed.data;
}
