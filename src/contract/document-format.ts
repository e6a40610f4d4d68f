import type { Integrity, Snapshot, SnapshotDraft } from './snapshot.js';
import type { JsonSchema } from './json.js';

/** A document's bytes and the snapshot it seals. */
export interface EncodedSnapshot<P> {
  readonly bytes: Uint8Array;
  readonly snapshot: Snapshot<P>;
}

/**
 * Stable warning codes of a tolerant read (see {@link DocumentFormat.decodeForeign}). They are
 * also resume-plan warning codes: a plan resumed from such a document carries them.
 * Codes are never renamed, only added.
 */
export const FOREIGN_READ_WARNINGS = [
  /** No savepoint seal: another tool (or a person) wrote the document. */
  'checkpoint_unsealed',
  /** Another tool's id or checksum scheme, which savepoint cannot verify. */
  'checkpoint_foreign_seal',
  /** Sealed by savepoint and edited since; accepted only by single-artifact formats, where the edited file is the newest truth. */
  'checkpoint_integrity_mismatch',
  /** A time without an offset (`2026-01-15T14:30:00.123456`, Python's naive `isoformat()`), read as UTC. */
  'checkpoint_time_without_offset',
  /**
   * The document carries no sequence (its spec has none: snapshot-lifecycle.md): the number in
   * the model is derived. A single read gives a provisional one; resume and the writer number
   * such snapshots by the run's order of time (`numberByRunOrder`).
   */
  'checkpoint_sequence_derived',
] as const;

/** A warning code of a tolerant read; see {@link FOREIGN_READ_WARNINGS}. */
export type ForeignReadWarning = (typeof FOREIGN_READ_WARNINGS)[number];

/**
 * A snapshot read tolerantly, and why it was not a strict read. `warnings` is empty when
 * the strict `decode` accepted the bytes, or when the document carries savepoint's intact
 * seal over members the strict schema does not know (a foreign document savepoint imported
 * as it was). `snapshot.integrity` is that seal, or else the SHA-256 of the bytes read.
 */
export interface ForeignRead<P> {
  readonly snapshot: Snapshot<P>;
  readonly warnings: readonly ForeignReadWarning[];
}

/**
 * What a document that failed validation still says about itself, read best effort (its
 * sequence, id and trigger): enough for a resume rule to know what it would step over.
 */
export interface DocumentClaims {
  readonly sequence?: number;
  readonly id?: string;
  /** The trigger as written (not normalized: `GATE_DECISION` stays as it is). */
  readonly source?: string;
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
   * Optional fast path of `encode` for formats that store the payload unchanged as one
   * member: seals the document from `header` and the payload's canonical JSON text, so the
   * writer's one serialization of the payload is the one stored. `payloadPieces`, when given,
   * are that text in pieces (`canonicalJsonOf`), written one after the other so the text is
   * never flattened whole (large payloads). Returns the integrity block
   * and the stored bytes (the caller owns the snapshot object).
   */
  encodePayloadText?(
    header: Omit<SnapshotDraft<P>, 'payload'>,
    payloadText: string,
    payloadPieces?: readonly string[],
  ): Promise<{ readonly bytes: Uint8Array; readonly integrity: Integrity }>;
  /**
   * `encodePayloadText` without a promise, when the format can seal synchronously (its
   * validator is loaded and the runtime hashes synchronously, as Node does); `undefined`
   * otherwise, and the caller awaits `encodePayloadText`. Same bytes, same checks, same errors:
   * it spares the writer's hot path a promise and a microtask turn per level.
   */
  encodePayloadTextSync?(
    header: Omit<SnapshotDraft<P>, 'payload'>,
    payloadText: string,
    payloadPieces?: readonly string[],
  ): { readonly bytes: Uint8Array; readonly integrity: Integrity } | undefined;
  /**
   * Decodes bytes (gunzipping `.gz` content transparently), validates and verifies them.
   * Throws `checkpoint_schema_invalid` or `checkpoint_integrity_mismatch`; `where` names
   * the file in messages.
   */
  decode(bytes: Uint8Array, where: string): Promise<Snapshot<P>>;
  /**
   * Liberal read of a document another tool wrote or edited: validated against the SPEC's
   * schema (not savepoint's stricter write schema), unknown fields kept. Throws like
   * `decode` when the document is invalid even under the spec. A history-based format
   * refuses a sealed file whose bytes changed (the tamper check stays); a single-artifact
   * format accepts it with `checkpoint_integrity_mismatch`. The read path calls it only
   * after `decode` refused the bytes (see {@link decodeTolerant}). Absent: strict reads only.
   */
  decodeForeign?(bytes: Uint8Array, where: string): Promise<ForeignRead<P>>;
  /**
   * Single-artifact formats: carries the fields another tool wrote in `previous` (the bytes
   * about to be replaced) into `next`, unchanged, and returns the bytes to store. The writer
   * calls it before rewriting such a file; it must return `next` itself when `previous`
   * holds nothing foreign, and never throw on a `previous` it cannot read (return `next`).
   */
  keepForeignFields?(previous: Uint8Array, next: Uint8Array): Uint8Array | Promise<Uint8Array>;
  /**
   * What a document `decode` refused still claims to be (sequence, id, trigger), read without
   * validation; `undefined` when nothing can be read. Never throws. The resume planner passes
   * the claims of refused files newer than the restored snapshot to the resume rule
   * (`ResumeRuleContext.unreadable`). Absent: only what the key name says is known.
   */
  claimsOf?(bytes: Uint8Array): DocumentClaims | undefined;
}
