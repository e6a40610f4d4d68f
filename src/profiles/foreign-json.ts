import { z } from 'zod';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { type JsonObject, type JsonValue } from '../contract/json.js';
import { documentChecksum, INTEGRITY_FIELD } from '../codec/json-document.js';
import { type DocumentClaims, type EncodedSnapshot, type ForeignRead, type ForeignReadWarning } from '../contract/document-format.js';
import { gunzip, isGzip } from '../codec/gzip.js';
import { sha256Hex } from '../codec/sha256.js';
import { CheckpointError } from '../contract/errors.js';
import { FORMAT_VERSION, type Integrity, type SnapshotDraft } from '../contract/snapshot.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';

const LIBERAL_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * The instant of an ISO 8601 / RFC 3339 time as people and tools write it — `Z` or any
 * offset (`+02:00`, `+0200`, `+02`), any fractional precision, `T` or a space, with or
 * without seconds, or no offset at all (Python's `isoformat()` of a naive time: read as UTC,
 * see {@link lacksOffset}) — as savepoint's model keeps it: UTC with a `Z`. A `Z` time is kept
 * as written; another becomes the same instant (to the millisecond). `undefined` when the
 * text is not such a time. savepoint itself writes `Z` only.
 */
export function liberalUtc(time: string): string | undefined {
  const m = LIBERAL_TIME.exec(time.trim());
  if (!m) return undefined;
  const offset = m[4] ?? 'Z';
  const text = `${m[1]}T${m[2]}${m[3] ?? ':00'}${offset === 'z' ? 'Z' : offset}`;
  if (/^[Zz]$/.test(offset) && m[3] !== undefined) return text;
  const zone =
    offset === 'Z' || offset === 'z'
      ? 'Z'
      : offset.length === 3
        ? `${offset}:00`
        : offset.includes(':')
          ? offset
          : `${offset.slice(0, 3)}:${offset.slice(3)}`;
  const ms = Date.parse(`${m[1]}T${m[2]}${m[3] ?? ':00'}${zone}`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** True when `time` is a time {@link liberalUtc} reads but it carries no offset (read as UTC, with a warning). */
export const lacksOffset = (time: string): boolean => {
  const m = LIBERAL_TIME.exec(time.trim());
  return m !== null && m[4] === undefined;
};

/** Any time {@link liberalUtc} reads, for the spec schemas of documents other tools write. */
export const LiberalTimeSchema = z.string().refine((t) => liberalUtc(t) !== undefined, { message: 'Invalid ISO datetime' });

/** A foreign time as savepoint's model keeps it: UTC with a `Z` (see {@link liberalUtc}). */
export function toUtc(time: string): string {
  return liberalUtc(time) ?? time;
}

/** True when some string member of `value`, at any depth, is a time without an offset. */
export function hasOffsetlessTime(value: unknown): boolean {
  if (typeof value === 'string') return value.length <= 40 && lacksOffset(value);
  if (Array.isArray(value)) return value.some(hasOffsetlessTime);
  if (isJsonObject(value)) return Object.values(value).some(hasOffsetlessTime);
  return false;
}

/** How one JSON profile reads documents another tool wrote. See {@link foreignJsonReader}. */
export interface ForeignJsonReaderOptions<P> {
  /**
   * `history`: the document is one immutable history entry among many, so a file savepoint
   * sealed whose checksum fails is refused (the tamper and corruption check stays).
   * `single`: the document is the run's one artifact that other tools rewrite, so such a
   * file is the newest truth and is read with `checkpoint_integrity_mismatch`.
   */
  readonly kind: 'history' | 'single';
  /**
   * True when savepoint wrote the document: its own additions are there (two or more
   * members, so that one changed byte cannot hide them all). Only then does the file's
   * checksum have to verify; a document without them is another tool's.
   */
  sealedBySavepoint(document: JsonObject): boolean;
  /**
   * Maps the document (without `integrity`) to the model, validated against the spec's own
   * schema; throws `checkpoint_schema_invalid` when the document is invalid even there.
   * `integrity` is the member as found (savepoint's bookkeeping, another tool's seal, or absent).
   */
  toDraft(document: JsonObject, where: string, integrity: JsonValue | undefined): SnapshotDraft<P> | Promise<SnapshotDraft<P>>;
  /**
   * True when the document carries no number of its own, so the draft's `sequence` is only
   * provisional: the read then warns `checkpoint_sequence_derived`, and readers of the whole
   * run number it by the run's order. Absent: every document carries its number.
   */
  sequenceDerived?(document: JsonObject): boolean;
}

/** A plain JSON object value. */
export const isJsonObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** True when `document` has at least `atLeast` of the members `names`. */
export function hasMembers(document: JsonObject | undefined, names: readonly string[], atLeast = 1): boolean {
  return document !== undefined && names.filter((n) => Object.hasOwn(document, n)).length >= atLeast;
}

/** `integrity` as savepoint writes it: a format version, `algorithm: 'sha256'` and a 64-hex checksum. */
export function hasSavepointIntegrity(document: JsonObject): boolean {
  const integrity = document[INTEGRITY_FIELD];
  return (
    isJsonObject(integrity) &&
    integrity.algorithm === 'sha256' &&
    typeof integrity.format_version === 'string' &&
    typeof integrity.checksum === 'string' &&
    /^[0-9a-f]{64}$/.test(integrity.checksum)
  );
}

/** `source_details` as savepoint writes it: an array of `{ source, at, … }` objects (empty included). */
export function hasSavepointSourceDetails(document: JsonObject): boolean {
  const details = document.source_details;
  return Array.isArray(details) && details.every((d) => isJsonObject(d) && typeof d.source === 'string' && typeof d.at === 'string');
}

/**
 * True when at least two of savepoint's marks are on the document: its `integrity` shape, its
 * `source_details` shape, and `extra` (members only savepoint adds). One mark alone is what
 * another tool may write too (the spec's own `source_details`, an integrity block of the
 * spec's shape); two cannot all be lost to one changed byte.
 */
export function carriesSavepointMarks(document: JsonObject, extra: readonly string[]): boolean {
  const marks = [hasSavepointIntegrity(document), hasSavepointSourceDetails(document), ...extra.map((m) => Object.hasOwn(document, m))];
  return marks.filter(Boolean).length >= 2;
}

/**
 * A foreign `source_details` in any shape the specs' words allow, as the model keeps it:
 * a bare trigger name (`["timer"]`) or an entry without a time (`[{ "source": "timer" }]`)
 * takes the document's own time; anything else is left for the schema to refuse.
 */
export function liberalSourceDetails(details: JsonValue | undefined, documentTime: JsonValue | undefined): JsonValue | undefined {
  if (!Array.isArray(details)) return details;
  return details.map((d) => {
    if (typeof d === 'string') return { source: d, at: documentTime ?? null };
    if (isJsonObject(d) && d.at === undefined) return { ...d, at: documentTime ?? null };
    return d;
  });
}

/**
 * Builds a format's `decodeForeign`: parses (and gunzips) the bytes, decides whose seal the
 * document carries, and maps it with the spec's own schema. The returned snapshot's
 * `integrity.checksum` is the SHA-256 of the bytes read (the document's own seal, if any,
 * cannot be verified by savepoint), so two reads of the same file agree.
 */
export function foreignJsonReader<P>(options: ForeignJsonReaderOptions<P>): (bytes: Uint8Array, where: string) => Promise<ForeignRead<P>> {
  return async (bytes, where) => {
    const plain = isGzip(bytes) ? gunzip(bytes, where) : bytes;
    const document = parseJson(utf8Decode(plain, where), where);
    if (!isJsonObject(document))
      throw new CheckpointError('checkpoint_schema_invalid', `${where} is not a JSON object`, { details: { where } });
    const integrity = document[INTEGRITY_FIELD];
    const warnings: ForeignReadWarning[] = [];
    let seal: Integrity | undefined;
    if (options.sealedBySavepoint(document)) {
      const stored = isJsonObject(integrity) ? integrity.checksum : undefined;
      if (stored === (await documentChecksum(document)) && isJsonObject(integrity)) {
        // Sealed as is (a foreign document savepoint imported): the seal holds, only the schema is the spec's.
        seal = { format_version: String(integrity.format_version ?? FORMAT_VERSION), algorithm: 'sha256', checksum: stored as string };
      } else {
        if (options.kind === 'history') {
          throw new CheckpointError(
            'checkpoint_integrity_mismatch',
            `${where}: the file carries savepoint's seal marks and its checksum is missing or does not match its bytes`,
            { details: { where } },
          );
        }
        warnings.push('checkpoint_integrity_mismatch');
      }
    } else {
      warnings.push(integrity === undefined ? 'checkpoint_unsealed' : 'checkpoint_foreign_seal');
    }
    const { [INTEGRITY_FIELD]: _integrity, ...rest } = document;
    if (hasOffsetlessTime(rest)) warnings.push('checkpoint_time_without_offset');
    if (options.sequenceDerived?.(rest)) warnings.push('checkpoint_sequence_derived');
    const draft = await options.toDraft(rest, where, integrity);
    return {
      snapshot: { ...draft, integrity: seal ?? { format_version: FORMAT_VERSION, algorithm: 'sha256', checksum: await sha256Hex(plain) } },
      warnings,
    };
  };
}

/**
 * Seals a document another tool wrote as it is: every member kept (vendor fields, the
 * original offsets and ids), savepoint's `integrity` added with `meta` (bookkeeping a format
 * keeps there) and a checksum over the whole document, as `documentChecksum` defines it.
 * Such a file fails the strict schema but its seal verifies, so reads accept it without a
 * warning and any later change to it is caught.
 */
export async function sealAsIs(document: JsonObject, meta: JsonObject = {}): Promise<{ bytes: Uint8Array; integrity: Integrity }> {
  const { [INTEGRITY_FIELD]: _replaced, ...rest } = document;
  const base: JsonObject = { format_version: FORMAT_VERSION, algorithm: 'sha256', ...meta };
  const checksum = await documentChecksum({ ...rest, [INTEGRITY_FIELD]: base });
  return {
    bytes: utf8Encode(canonicalJson({ ...rest, [INTEGRITY_FIELD]: { ...base, checksum } })),
    integrity: { format_version: FORMAT_VERSION, algorithm: 'sha256', checksum },
  };
}

/** Seals one foreign document of a profile: its stored bytes and the snapshot they hold. */
export type ForeignSealer<P> = (document: JsonObject, where: string) => Promise<EncodedSnapshot<P>>;

/** Where a JSON format keeps the members {@link jsonClaimsReader} reads. */
export interface ClaimFields {
  readonly sequence: string;
  readonly id: string;
  readonly source: string;
}

/**
 * A format's `claimsOf` for JSON documents: parses the bytes (gunzipped) without validation
 * and reads the sequence, id and trigger members when they have the right type; `undefined`
 * when the bytes are not a JSON object. Never throws.
 */
export function jsonClaimsReader(fields: ClaimFields): (bytes: Uint8Array) => DocumentClaims | undefined {
  return (bytes) => {
    let document: unknown;
    try {
      document = JSON.parse(utf8Decode(isGzip(bytes) ? gunzip(bytes, 'claims') : bytes, 'claims').replace(/^\uFEFF/, ''));
    } catch {
      return undefined;
    }
    if (!isJsonObject(document)) return undefined;
    const sequence = document[fields.sequence];
    const id = document[fields.id];
    const source = document[fields.source];
    return {
      ...(typeof sequence === 'number' && Number.isInteger(sequence) ? { sequence } : {}),
      ...(typeof id === 'string' ? { id } : {}),
      ...(typeof source === 'string' ? { source } : {}),
    };
  };
}
