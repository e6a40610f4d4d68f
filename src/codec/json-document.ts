import { z } from 'zod';
import { CheckpointError } from '../model/errors.js';
import { FORMAT_VERSION, type Integrity, type Snapshot, type SnapshotDraft } from '../model/snapshot.js';
import { assertValid, compileValidator, type DocumentValidator, type JsonSchema } from '../model/validate.js';
import { canonicalJson, parseJson, type JsonObject } from './canonical-json.js';
import { gunzip, isGzip } from './gzip.js';
import { sha256Hex } from './sha256.js';
import { utf8Decode, utf8Encode } from './utf8.js';

/** A document's bytes and the snapshot it seals. */
export interface EncodedSnapshot<P> {
  readonly bytes: Uint8Array;
  readonly snapshot: Snapshot<P>;
}

/**
 * How a profile stores a snapshot as bytes. `decode` is the only way savepoint reads a
 * stored snapshot, so every read is validated: JSON Schema first, then the checksum.
 */
export interface DocumentFormat<P> {
  /** File extension of stored documents (`.json`, `.md`). */
  readonly extension: string;
  /** JSON Schema (draft 2020-12) of the stored document, for non-TypeScript tools. */
  readonly jsonSchema: JsonSchema;
  /** Seals `draft` (computes its integrity block) and encodes it. Rejects a draft whose document would not validate. */
  encode(draft: SnapshotDraft<P>): Promise<EncodedSnapshot<P>>;
  /**
   * Decodes bytes (gunzipping `.gz` content transparently), validates and verifies them.
   * Throws `checkpoint_schema_invalid` or `checkpoint_integrity_mismatch`; `where` names
   * the file in messages.
   */
  decode(bytes: Uint8Array, where: string): Promise<Snapshot<P>>;
}

/** Name of the integrity member in JSON documents. */
export const INTEGRITY_FIELD = 'integrity';

/**
 * The checksum savepoint stores in `integrity.checksum`: SHA-256 of the canonical JSON of
 * the whole document with `integrity.checksum` itself left out. Covering the whole
 * document (ids, status, trigger — not only the payload) means any flipped field is caught.
 */
export async function documentChecksum(document: JsonObject): Promise<string> {
  const integrity = document[INTEGRITY_FIELD];
  const rest: JsonObject = { ...document };
  if (integrity && typeof integrity === 'object' && !Array.isArray(integrity)) {
    const { checksum: _omitted, ...meta } = integrity;
    rest[INTEGRITY_FIELD] = meta;
  }
  return sha256Hex(canonicalJson(rest));
}

/** A sealed document, its integrity block, and its canonical bytes. */
export interface SealedDocument {
  readonly document: JsonObject;
  readonly integrity: Integrity;
  /** UTF-8 of the canonical JSON of `document`, as stored. */
  readonly bytes: Uint8Array;
}

/**
 * Adds the integrity block to `document` (without one): the sealed document and its
 * canonical bytes. Each top-level member is serialized once and the two texts (without and
 * with the checksum) are assembled from the same pieces, so a large payload is
 * canonicalized once per write instead of twice.
 */
export async function sealDocumentBytes(document: JsonObject, formatVersion = FORMAT_VERSION): Promise<SealedDocument> {
  const members = new Map<string, string>();
  for (const key of Object.keys(document)) {
    const value = document[key];
    if (key !== INTEGRITY_FIELD && value !== undefined) members.set(key, canonicalJson(value));
  }
  const assemble = (integrityText: string): string => {
    const all = new Map(members).set(INTEGRITY_FIELD, integrityText);
    return `{${[...all.keys()].sort().map((k) => `${JSON.stringify(k)}:${all.get(k)!}`).join(',')}}`;
  };
  const checksum = await sha256Hex(assemble(canonicalJson({ format_version: formatVersion, algorithm: 'sha256' })));
  const integrity: Integrity = { format_version: formatVersion, algorithm: 'sha256', checksum };
  return { document: { ...document, [INTEGRITY_FIELD]: integrity }, integrity, bytes: utf8Encode(assemble(canonicalJson(integrity))) };
}

/** Adds the integrity block to `document` (without one) and returns the sealed document. */
export async function sealDocument(document: JsonObject, formatVersion = FORMAT_VERSION): Promise<{ document: JsonObject; integrity: Integrity }> {
  const { document: sealed, integrity } = await sealDocumentBytes(document, formatVersion);
  return { document: sealed, integrity };
}

/** Throws `checkpoint_integrity_mismatch` unless the document's stored checksum matches its content. */
export async function verifyDocument(document: JsonObject, where: string): Promise<void> {
  const integrity = document[INTEGRITY_FIELD] as { checksum?: unknown } | undefined;
  const stored = integrity?.checksum;
  const actual = await documentChecksum(document);
  if (stored !== actual) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where}: stored checksum does not match the content`, {
      details: { where },
    });
  }
}

/** Options of {@link jsonDocumentFormat}. */
export interface JsonDocumentFormatOptions<P, D extends JsonObject> {
  /**
   * zod schema of the whole stored document, including its `integrity` member
   * (use `IntegritySchema`). Its JSON Schema is exported and checked with ajv on every read.
   */
  readonly schema: z.ZodType<D>;
  /** Maps the internal model to the spec's document (without `integrity`). */
  toDocument(draft: SnapshotDraft<P>): Omit<D, typeof INTEGRITY_FIELD>;
  /** Maps a validated document back to the internal model. */
  fromDocument(document: D): SnapshotDraft<P>;
  /** @default FORMAT_VERSION */
  readonly formatVersion?: string;
  /** Precompiled validator (e.g. ajv standalone code); compiled from the schema with ajv when absent. */
  readonly validator?: DocumentValidator;
}

/**
 * Builds the {@link DocumentFormat} of a JSON profile: canonical JSON bytes, an `integrity`
 * block with a SHA-256 checksum, JSON Schema validation on read and on write.
 */
export function jsonDocumentFormat<P, D extends JsonObject>(options: JsonDocumentFormatOptions<P, D>): DocumentFormat<P> {
  const jsonSchema = z.toJSONSchema(options.schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  let validator = options.validator;
  const validate = (doc: unknown): ReturnType<DocumentValidator> => (validator ??= compileValidator(jsonSchema))(doc);

  return {
    extension: '.json',
    jsonSchema,
    async encode(draft) {
      const { document, integrity, bytes } = await sealDocumentBytes(options.toDocument(draft) as JsonObject, options.formatVersion);
      assertValid(validate(document), `snapshot ${draft.sequence} of run ${draft.runId}`);
      return { bytes, snapshot: { ...draft, integrity } };
    },
    async decode(bytes, where) {
      const plain = isGzip(bytes) ? gunzip(bytes, where) : bytes;
      const document = parseJson(utf8Decode(plain, where), where);
      assertValid(validate(document), where);
      await verifyDocument(document as JsonObject, where);
      const draft = options.fromDocument(document as D);
      return { ...draft, integrity: (document as JsonObject)[INTEGRITY_FIELD] as Integrity };
    },
  };
}
