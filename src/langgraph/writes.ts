import { z } from 'zod';
import { parseJson, type JsonObject } from '../codec/canonical-json.js';
import { sealDocumentBytes, verifyDocument } from '../codec/json-document.js';
import { utf8Decode } from '../codec/utf8.js';
import { CheckpointError } from '../model/errors.js';
import { IntegritySchema } from '../model/snapshot.js';

/** One pending write of a task, as LangGraph's serializer wrote its value. */
export const StoredWriteSchema = z.object({ idx: z.number().int(), channel: z.string(), type: z.string().min(1), data: z.string() }).strict();
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

/** Seals and encodes a writes document. */
export async function encodeWrites(document: Omit<WritesDocument, 'integrity'>): Promise<Uint8Array> {
  return (await sealDocumentBytes(document as unknown as JsonObject)).bytes;
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
