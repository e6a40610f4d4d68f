import type { z } from 'zod';
import { assertBytesArgument, assertStringArgument } from '../contract/arguments.js';
import { CheckpointError } from '../contract/errors.js';
import { FORMAT_VERSION } from '../contract/snapshot-constants.js';
import type { Integrity, Snapshot, SnapshotDraft } from '../contract/snapshot.js';
import { assertValid, type DocumentValidator } from './document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import { withMember } from '../contract/with-member.js';
import { loadValidator } from './load-validator.js';
import { canonicalJson, canonicalTextOrPieces, parseJson, quotedKey, sortKeys } from './canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { gunzip, isGzip } from './gzip.js';
import { sha256Hex, sha256HexAndLengthOfPiecesSync, sha256HexOfParts, sha256HexOfTextSync, sha256HexSync } from './sha256.js';
import { parseJsonPieces } from './json-pieces.js';
import { utf8Decode, utf8Encode, utf8EncodeInto } from './utf8.js';
import { assertObjectArgument, assertOptionsArgument } from '../contract/arguments.js';
import { type ForeignRead, type DocumentFormat } from '../contract/document-format.js';

/**
 * The read path's one decode: the strict `decode` first, then the format's `decodeForeign`
 * when it has one. When both refuse, the strict error is thrown — a tampered history file
 * stays `checkpoint_integrity_mismatch` — except that the liberal read's error replaces a
 * strict schema error (it names what is really wrong with a foreign file: the spec's schema,
 * or a broken seal on a document savepoint sealed as it was).
 */
export async function decodeTolerant<P>(format: DocumentFormat<P>, bytes: Uint8Array, where: string): Promise<ForeignRead<P>> {
  if (typeof (format as Partial<DocumentFormat<P>> | null)?.decode !== 'function')
    throw new CheckpointError('checkpoint_config_invalid', 'decodeTolerant: format must be a DocumentFormat (with decode)');
  assertBytesArgument(bytes, 'decodeTolerant');
  assertStringArgument(where, 'decodeTolerant', 'where');
  try {
    return { snapshot: await format.decode(bytes, where), warnings: [] };
  } catch (strict) {
    if (!format.decodeForeign || !(strict instanceof CheckpointError)) throw strict;
    try {
      return await format.decodeForeign(bytes, where);
    } catch (foreign) {
      // The liberal read knows more about a document the strict schema refused: what the spec's schema says, or that its seal broke.
      throw foreign instanceof CheckpointError && strict.reasonCode === 'checkpoint_schema_invalid' ? foreign : strict;
    }
  }
}

/** Name of the integrity member in JSON documents. */
export const INTEGRITY_FIELD = 'integrity';

/** Texts longer than this are hashed chunk by chunk (see documentChecksum). */
const CHUNKED_HASH = 1 << 20;

/**
 * The checksum savepoint stores in `integrity.checksum`: SHA-256 of the canonical JSON of
 * the whole document with `integrity.checksum` itself left out. Covering the whole
 * document (ids, status, trigger — not only the payload) means any flipped field is caught.
 */
export async function documentChecksum(document: JsonObject): Promise<string> {
  assertObjectArgument(document, 'documentChecksum', 'document');
  const integrity = document[INTEGRITY_FIELD];
  const rest: JsonObject = { ...document };
  if (integrity && typeof integrity === 'object' && !Array.isArray(integrity)) {
    const { checksum: _omitted, ...meta } = integrity;
    rest[INTEGRITY_FIELD] = meta;
  }
  // A large document (a split snapshot reassembled) is hashed chunk by chunk: its big strings
  // stay the document's own (pieces), and no UTF-8 copy of its whole text is made.
  const { text, pieces } = canonicalTextOrPieces(rest);
  const chunked = pieces ?? (text.length > CHUNKED_HASH ? [text] : undefined);
  return (chunked && sha256HexAndLengthOfPiecesSync(chunked)?.hex) ?? sha256Hex(text);
}

/** What a format's payload sealer returns (see {@link payloadSealerOf}): a sealed document, not encoded. */
export interface SealedPayloadDocument {
  /** The canonical JSON text of the sealed document, checksum included, in segments (big strings and the payload's text shared, not copied). */
  readonly text: readonly string[];
  /** The document as `parseJson` would read its stored bytes back (keys in canonical order), parsed on each call. */
  document(): JsonObject;
  readonly integrity: Integrity;
  /** Length of its canonical UTF-8 bytes. */
  readonly bytes: number;
}

/** A sealed document, its integrity block, and its canonical bytes. */
export interface SealedDocument {
  readonly document: JsonObject;
  readonly integrity: Integrity;
  /** UTF-8 of the canonical JSON of `document`, as stored. */
  readonly bytes: Uint8Array;
}

/**
 * Seals a document given as the canonical JSON text of each top-level member (without
 * `integrity`; a member's text may come in pieces, see `canonicalJsonOf`): its integrity block and its stored bytes. The document is UTF-8 encoded
 * once, into one buffer: first the canonical text without `integrity.checksum` — exactly
 * what `documentChecksum` covers — which is hashed in one piece, then the tail after
 * `"integrity":{"algorithm":"sha256",` is moved up to make room for the
 * `"checksum":"…",` member, written in place. No string of the whole document is built
 * when a member is large (a 200 KB payload would be copied into it, and again to encode it).
 */
export function sealMembers(
  members: ReadonlyMap<string, string | readonly string[]>,
  formatVersion = FORMAT_VERSION,
): Promise<{ integrity: Integrity; bytes: Uint8Array }> {
  return sealPieces(piecesOfMembers(members, JSON.stringify(formatVersion)), formatVersion);
}

async function sealPieces({ pieces, gap }: SealedPieces, formatVersion: string): Promise<{ integrity: Integrity; bytes: Uint8Array }> {
  const { buffer, length, offsets } = encodePieces(pieces, CHECKSUM_SPAN);
  const checksum = sha256HexSync(buffer.subarray(0, length)) ?? (await sha256Hex(buffer.subarray(0, length)));
  return sealEncoded(buffer, length, offsets[gap]!, checksum, formatVersion);
}

/**
 * {@link sealMembers} without a promise, where the runtime hashes synchronously (Node);
 * undefined elsewhere (then await `sealMembers`). The writer's hot path: an await costs a
 * promise and a microtask turn per level, and a small document is sealed in a few microseconds.
 */
export function sealMembersSync(
  members: ReadonlyMap<string, string | readonly string[]>,
  formatVersion = FORMAT_VERSION,
): { integrity: Integrity; bytes: Uint8Array } | undefined {
  if (!canHashSync) return undefined;
  return sealPiecesSync(piecesOfMembers(members, JSON.stringify(formatVersion)), formatVersion);
}

/** A document sealed around its integrity member (see {@link sealTextAroundIntegrity}): its stored bytes and the checksum they hold. */
export interface SealedText {
  readonly bytes: Uint8Array;
  readonly checksum: string;
}

/**
 * The stored bytes of a canonical document given as its text up to the `integrity` member
 * (`{…,`: the members that sort before it) and from after it (`,…}`): what {@link sealMembers}
 * makes of the same members, for a caller that writes its documents' text itself (the
 * LangGraph saver). Synchronous where the runtime hashes synchronously.
 */
export function sealAroundIntegrity(before: string, after: string, formatVersion = FORMAT_VERSION): Uint8Array | Promise<Uint8Array> {
  const sealed = sealTextAroundIntegrity(before, after, undefined, formatVersion);
  return sealed instanceof Promise ? sealed.then((s) => s.bytes) : sealed.bytes;
}

/**
 * {@link sealAroundIntegrity} with the checksum it wrote, sealed into `scratch` when given and
 * the bytes fit (see {@link sealAroundIntegrityInto}): for a caller that keeps what it sealed
 * as a read of it would decode it. `before` may come in pieces, encoded one by one: a large
 * piece the caller seals again and again (a channel carried from checkpoint to checkpoint) is
 * then encoded from its own flat text, not copied into a new string of the whole document first.
 */
export function sealTextAroundIntegrity(
  before: string | readonly string[],
  after: string,
  scratch?: Uint8Array,
  formatVersion = FORMAT_VERSION,
): SealedText | Promise<SealedText> {
  const inScratch = scratch && mayFit(before, after, scratch) && sealedInto(joinedText(before), after, scratch, formatVersion);
  if (inScratch) return inScratch;
  const sealed =
    typeof before === 'string' ? piecesAroundIntegrity(before, after, formatVersion) : piecesAfter(before, after, formatVersion);
  // No closure on the synchronous path (Node's): it runs for every document a saver puts.
  return canHashSync ? sealedText(sealPiecesSync(sealed, formatVersion)) : sealPieces(sealed, formatVersion).then(sealedText);
}

const sealedText = (s: { integrity: Integrity; bytes: Uint8Array }): SealedText => ({ bytes: s.bytes, checksum: s.integrity.checksum });

/**
 * Whether a document of these texts may fit in `scratch`: each character takes a byte at least,
 * so one with more characters than the room cannot. Checked before the pieces are joined: a large
 * channel's text would be copied into a new string of the whole document for nothing.
 */
function mayFit(before: string | readonly string[], after: string, scratch: Uint8Array): boolean {
  let chars = after.length + CHECKSUM_SPAN;
  if (typeof before === 'string') chars += before.length;
  else for (const piece of before) chars += piece.length;
  return chars <= scratch.length;
}

const joinedText = (before: string | readonly string[]): string => (typeof before === 'string' ? before : before.join(''));

const piecesAroundIntegrity = (before: string, after: string, formatVersion: string): SealedPieces => ({
  pieces: [`${before}"${INTEGRITY_FIELD}":{"algorithm":"sha256",`, `"format_version":${JSON.stringify(formatVersion)}}${after}`],
  gap: 1,
});

/** {@link piecesAroundIntegrity} of a text before the integrity member given in pieces (at least one). */
function piecesAfter(before: readonly string[], after: string, formatVersion: string): SealedPieces {
  if (before.length === 1) return piecesAroundIntegrity(before[0]!, after, formatVersion);
  const [head, tail] = piecesAroundIntegrity(before[before.length - 1]!, after, formatVersion).pieces as [string, string];
  return { pieces: [...before.slice(0, -1), head, tail], gap: before.length };
}

/**
 * {@link sealAroundIntegrity} into `scratch`, a buffer the caller reuses: the same bytes, as
 * a view of `scratch`'s start, or undefined when they do not fit or the runtime cannot hash
 * synchronously (then call `sealAroundIntegrity`). For a caller that hands the bytes at once
 * to a store which copies them before its call returns (`memoryStorage`): a fresh buffer per
 * small document costs more to allocate and collect than the document costs to encode.
 */
export function sealAroundIntegrityInto(
  before: string,
  after: string,
  scratch: Uint8Array,
  formatVersion = FORMAT_VERSION,
): Uint8Array | undefined {
  return sealedInto(before, after, scratch, formatVersion)?.bytes;
}

/** {@link sealAroundIntegrityInto}, with the checksum written. */
function sealedInto(before: string, after: string, scratch: Uint8Array, formatVersion: string): SealedText | undefined {
  if (!canHashSync) return undefined;
  const [head, tail] = piecesAroundIntegrity(before, after, formatVersion).pieces as [string, string];
  const room = scratch.length - CHECKSUM_SPAN;
  if (head.length + tail.length > room) return undefined;
  const h = utf8EncodeInto(head, scratch.subarray(0, room));
  if (h.read !== head.length) return undefined;
  const t = utf8EncodeInto(tail, scratch.subarray(h.written, room));
  if (t.read !== tail.length) return undefined;
  const length = h.written + t.written;
  const checksum = sha256HexSync(scratch.subarray(0, length))!;
  return { bytes: scratch.subarray(0, writeChecksum(scratch, length, h.written, checksum)), checksum };
}

/** {@link sealPieces} with a synchronous hash (the caller checked `canHashSync`). */
function sealPiecesSync({ pieces, gap }: SealedPieces, formatVersion: string): { integrity: Integrity; bytes: Uint8Array } {
  // The usual document: the text before the checksum member and the text after it, encoded
  // straight into one buffer (no list of offsets, no second pass).
  if (pieces.length === 2 && gap === 1) {
    const head = pieces[0]!;
    const tail = pieces[1]!;
    const chars = head.length + tail.length;
    const buffer = new Uint8Array(chars + CHECKSUM_SPAN);
    const h = utf8EncodeInto(head, buffer);
    // The tail may use the bytes up to `chars` only: the spare bytes are the checksum's. A
    // text that is not ASCII may not fit; the general path below sizes for the worst case.
    const t = h.read === head.length ? utf8EncodeInto(tail, buffer.subarray(h.written, chars)) : undefined;
    if (t !== undefined && t.read === tail.length) {
      const length = h.written + t.written;
      return sealEncoded(buffer, length, h.written, sha256HexSync(buffer.subarray(0, length))!, formatVersion);
    }
  }
  const { buffer, length, offsets } = encodePieces(pieces, CHECKSUM_SPAN);
  return sealEncoded(buffer, length, offsets[gap]!, sha256HexSync(buffer.subarray(0, length))!, formatVersion);
}

/** True where SHA-256 runs synchronously (Node's `crypto.hash` or `createHash`). */
const canHashSync = sha256HexSync(new Uint8Array(0)) !== undefined;

/**
 * Seals an encoded document in place: `buffer` holds its canonical text without the checksum
 * member (`length` bytes, whose SHA-256 is `checksum`) and at least CHECKSUM_SPAN spare bytes
 * after it; the text from byte `at` on (right after `"integrity":{"algorithm":"sha256",`) moves
 * up and `"checksum":"…",` is written in the gap.
 */
function sealEncoded(
  buffer: Uint8Array,
  length: number,
  at: number,
  checksum: string,
  formatVersion: string,
): { integrity: Integrity; bytes: Uint8Array } {
  const total = writeChecksum(buffer, length, at, checksum);
  const bytes = total === buffer.length ? buffer : buffer.slice(0, total);
  return { integrity: { format_version: formatVersion, algorithm: 'sha256', checksum }, bytes };
}

/** {@link sealEncoded}'s work in `buffer` itself; returns the sealed length. */
function writeChecksum(buffer: Uint8Array, length: number, at: number, checksum: string): number {
  buffer.copyWithin(at + CHECKSUM_SPAN, at, length);
  let i = at;
  for (let k = 0; k < CHECKSUM_OPEN.length; k++) buffer[i++] = CHECKSUM_OPEN.charCodeAt(k);
  for (let k = 0; k < checksum.length; k++) buffer[i++] = checksum.charCodeAt(k);
  buffer[i++] = 0x22; // "
  buffer[i] = 0x2c; // ,
  return length + CHECKSUM_SPAN;
}

/** The start of the checksum member (ASCII). */
const CHECKSUM_OPEN = '"checksum":"';

/** A checksum's shape, for validating a document before it is sealed. */
const CHECKSUM_PLACEHOLDER = '0'.repeat(64);
/** Length of `"checksum":"<64 hex>",` (ASCII). */
const CHECKSUM_SPAN = CHECKSUM_OPEN.length + 64 + '",'.length;
/** Members longer than this are encoded as pieces of their own instead of joined into a string. */
const LARGE_MEMBER = 4096;

/**
 * The canonical text of a sealed document without its checksum member, as few strings as
 * possible (large member values stay pieces of their own), and the index of the piece the
 * `"checksum":"…",` member goes in front of: right after `"integrity":{"algorithm":"sha256",`.
 */
function sealedPieces(keys: string[], textOf: (key: string) => MemberText | undefined, version: string): SealedPieces {
  sortKeys(keys);
  const pieces: string[] = [];
  let text = '{';
  let gap = -1;
  let comma = false;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (k === INTEGRITY_FIELD) continue;
    const value = textOf(k);
    if (value === undefined) continue;
    if (gap < 0 && k > INTEGRITY_FIELD) {
      pieces.push(`${text}${comma ? ',' : ''}"${INTEGRITY_FIELD}":{"algorithm":"sha256",`);
      gap = pieces.length;
      text = `"format_version":${version}}`;
      comma = true;
    }
    text += `${comma ? ',' : ''}${quotedKey(k)}:`;
    comma = true;
    if (typeof value !== 'string') {
      // A member's text in pieces (big strings by reference): each stays a piece of its own
      // (pushed one by one, not spread: there may be very many).
      pieces.push(text);
      for (const piece of value) pieces.push(piece);
      text = '';
    } else if (value.length > LARGE_MEMBER) {
      pieces.push(text, value);
      text = '';
    } else text += value;
  }
  if (gap < 0) {
    pieces.push(`${text}${comma ? ',' : ''}"${INTEGRITY_FIELD}":{"algorithm":"sha256",`);
    gap = pieces.length;
    text = `"format_version":${version}}`;
  }
  pieces.push(`${text}}`);
  return { pieces, gap };
}

/** A member's canonical JSON text, whole or in pieces (see `canonicalJsonOf`). */
type MemberText = string | readonly string[];

/** A document's text without its checksum member, and where that member goes (see sealedPieces). */
interface SealedPieces {
  readonly pieces: string[];
  readonly gap: number;
}

/** The pieces of a document given as a map of member texts. */
const piecesOfMembers = (members: ReadonlyMap<string, MemberText>, version: string): SealedPieces =>
  sealedPieces([...members.keys()], (k) => members.get(k), version);

/**
 * UTF-8 of the concatenation of `pieces` into one buffer with `spare` bytes left over at its
 * end: the buffer, the encoded length, and the byte offset where each piece starts. The
 * buffer is the text's length plus `spare` when the text is ASCII, as JSON usually is;
 * otherwise the worst case.
 */
function encodePieces(pieces: readonly string[], spare: number): { buffer: Uint8Array; length: number; offsets: number[] } {
  let chars = 0;
  for (const p of pieces) chars += p.length;
  for (const factor of [1, 3]) {
    const buffer = new Uint8Array(chars * factor + spare);
    // The text never runs into the spare bytes: a non-ASCII text that would is encoded again in the worst case's buffer.
    const room = spare === 0 ? buffer : buffer.subarray(0, chars * factor);
    const offsets: number[] = [];
    let at = 0;
    let fits = true;
    for (const p of pieces) {
      offsets.push(at);
      const { read, written } = utf8EncodeInto(p, at === 0 ? room : room.subarray(at));
      at += written;
      if (read !== p.length) {
        fits = false;
        break;
      }
    }
    if (fits) return { buffer, length: at, offsets };
  }
  throw new Error('unreachable: three bytes per UTF-16 unit always suffice');
}

/**
 * Adds the integrity block to `document` (without one): the sealed document and its
 * canonical bytes. Each top-level member is serialized once (see {@link sealMembers}).
 */
export async function sealDocumentBytes(document: JsonObject, formatVersion = FORMAT_VERSION): Promise<SealedDocument> {
  assertObjectArgument(document, 'sealDocumentBytes', 'document');
  const members = new Map<string, string>();
  for (const key of Object.keys(document)) {
    const value = document[key];
    if (key !== INTEGRITY_FIELD && value !== undefined) members.set(key, canonicalJson(value));
  }
  const { integrity, bytes } = await sealMembers(members, formatVersion);
  return { document: { ...document, [INTEGRITY_FIELD]: integrity }, integrity, bytes };
}

/** Throws `checkpoint_integrity_mismatch` unless the document's stored checksum matches its content. */
export async function verifyDocument(document: JsonObject, where: string): Promise<void> {
  assertObjectArgument(document, 'verifyDocument', 'document');
  const integrity = document[INTEGRITY_FIELD] as { checksum?: unknown } | undefined;
  const stored = integrity?.checksum;
  const actual = await documentChecksum(document);
  if (stored !== actual) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where}: stored checksum does not match the content`, {
      details: { where },
    });
  }
}

const HEX64 = /^[0-9a-f]{64}$/;
/** Documents up to this many characters are verified from their text (see verifyStoredBytes). */
const SMALL_DOCUMENT = 65536;

/**
 * Verifies a document over its stored bytes, without serializing it again: the bytes minus
 * the `"checksum":"<hex>"` member (and its comma) are the canonical text the checksum covers
 * whenever the stored bytes are canonical, which every file savepoint writes is. `text` is
 * `bytes` decoded. Returns false when that does not match (a file written in another
 * formatting, or a damaged one); the caller then falls back to {@link verifyDocument}.
 * Every occurrence of the span is tried: a nested object could carry the same member, and
 * removing the wrong one cannot hash to the checksum the text still contains.
 */
export async function verifyStoredBytes(bytes: Uint8Array, text: string, checksum: unknown): Promise<boolean> {
  if (typeof checksum !== 'string' || !HEX64.test(checksum)) return false;
  const needle = `"checksum":"${checksum}"`;
  const ascii = bytes.length === text.length;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
    let from = at;
    let to = at + needle.length;
    if (text[to] === ',') to++;
    else if (text[from - 1] === ',') from--;
    else continue;
    // A small document is hashed from its text in one call (valid UTF-8 decodes and encodes
    // back to the same bytes); a large one from its bytes, without a copy of the text.
    const once = text.length <= SMALL_DOCUMENT ? sha256HexOfTextSync(text.slice(0, from) + text.slice(to)) : undefined;
    if (once !== undefined) {
      if (once === checksum) return true;
      continue;
    }
    const start = ascii ? from : utf8Encode(text.slice(0, from)).length;
    const end = start + (to - from); // the span is ASCII
    if ((await sha256HexOfParts([bytes.subarray(0, start), bytes.subarray(end)])) === checksum) return true;
  }
  return false;
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
  /**
   * The top-level member that holds the payload exactly as given (the default profile's
   * `state`), if any. The writer then stores its one canonical serialization of the payload
   * there instead of serializing it again. The schema must accept any JSON value at this
   * member: the document is validated with `null` in its place (the payload itself was
   * checked by the profile's payload schema and by canonical encoding).
   */
  readonly payloadMember?: string;
}

/**
 * Builds the {@link DocumentFormat} of a JSON profile: canonical JSON bytes, an `integrity`
 * block with a SHA-256 checksum, JSON Schema validation on read and on write.
 *
 * The zod schema is turned into JSON Schema once, here. Unless `validator` is given, the
 * validator is loaded on the first encode or decode: the one generated at build time for
 * this schema, or else ajv compiling it (neither is a cost to a program that never uses
 * the format).
 */
export function jsonDocumentFormat<P, D extends JsonObject>(options: JsonDocumentFormatOptions<P, D>): DocumentFormat<P> {
  assertOptionsArgument(options, 'jsonDocumentFormat');
  assertObjectArgument(options.schema, 'jsonDocumentFormat', 'schema');
  if (typeof (options.schema as { toJSONSchema?: unknown }).toJSONSchema !== 'function') {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      'jsonDocumentFormat: schema must be a zod 4 schema (it has no toJSONSchema method)',
    );
  }
  // The schema's own method (zod 4): the same as z.toJSONSchema, without loading zod here.
  const jsonSchema = options.schema.toJSONSchema({ io: 'output', unrepresentable: 'any' }) as JsonSchema;
  const { schema: _schema, validator, ...rest } = options;
  return compiledJsonDocumentFormat<P, D>({
    ...rest,
    jsonSchema,
    ...(validator ? { validator } : { loadValidator: () => loadValidator(jsonSchema) }),
  });
}

/**
 * Options of {@link compiledJsonDocumentFormat}: {@link JsonDocumentFormatOptions} with the
 * document's JSON Schema and validator given instead of a zod schema.
 */
export interface CompiledJsonDocumentOptions<P, D extends JsonObject> extends Omit<
  JsonDocumentFormatOptions<P, D>,
  'schema' | 'validator'
> {
  readonly jsonSchema: JsonSchema;
  /** The validator of `jsonSchema` (one of `validator` and `loadValidator` is needed). */
  readonly validator?: DocumentValidator;
  /** How to get the validator when it is not given: called once, on the first encode or decode. */
  readonly loadValidator?: () => Promise<DocumentValidator>;
}

/**
 * {@link jsonDocumentFormat} from a JSON Schema and its validator, both generated at build
 * time (src/codec/generated/): how built-in profiles make their format without loading zod
 * or ajv.
 */
export function compiledJsonDocumentFormat<P, D extends JsonObject>(options: CompiledJsonDocumentOptions<P, D>): DocumentFormat<P> {
  const { jsonSchema, loadValidator } = options;
  let validator = options.validator;
  if (!validator && !loadValidator)
    throw new CheckpointError('checkpoint_config_invalid', 'compiledJsonDocumentFormat needs a validator or loadValidator');
  // Loaded once, on the first encode or decode; after that a check is a plain call.
  const loaded = async (): Promise<DocumentValidator> => (validator ??= await loadValidator!());
  const validate = (doc: unknown): ReturnType<DocumentValidator> | Promise<ReturnType<DocumentValidator>> =>
    validator ? validator(doc) : loaded().then((v) => v(doc));

  return {
    extension: '.json',
    jsonSchema,
    async encode(draft) {
      const { document, integrity, bytes } = await sealDocumentBytes(options.toDocument(draft) as JsonObject, options.formatVersion);
      assertValid(await validate(document), `snapshot ${draft.sequence} of run ${draft.runId}`);
      return { bytes, snapshot: { ...draft, integrity } };
    },
    ...(options.payloadMember !== undefined ? encodeText(options, validate, () => validator, options.payloadMember) : {}),
    decode: withParsedDecoder(
      async (bytes, where) => {
        const plain = isGzip(bytes) ? gunzip(bytes, where) : bytes;
        const text = utf8Decode(plain, where);
        const document = parseJson(text, where);
        assertValid(await validate(document), where);
        const integrity = (document as JsonObject)[INTEGRITY_FIELD] as { checksum?: unknown } | undefined;
        if (!(await verifyStoredBytes(plain, text, integrity?.checksum))) await verifyDocument(document as JsonObject, where);
        const draft = options.fromDocument(document as D);
        return withMember(draft, 'integrity', (document as JsonObject)[INTEGRITY_FIELD] as Integrity);
      },
      async (document, where, checksumVerified) => {
        // The same checks on a document already parsed (a split snapshot reassembled): no bytes to search, so the checksum is hashed from its canonical
        // pieces — unless the caller already verified it over the reassembled text (resolvePartsOfText).
        assertValid(await validate(document), where);
        if (checksumVerified !== true) await verifyDocument(document, where);
        const draft = options.fromDocument(document as D);
        return withMember(draft, 'integrity', document[INTEGRITY_FIELD] as Integrity);
      },
    ),
  };
}

/** A format's `decode` of an already parsed document; `checksumVerified`: its checksum was already verified over its canonical text. */
type ParsedDecoder<P> = (document: JsonObject, where: string, checksumVerified?: boolean) => Promise<Snapshot<P>>;
/** A format's sealer of a payload text without encoding it. */
type PayloadSealer<P> = (
  header: Omit<SnapshotDraft<P>, 'payload'>,
  payloadText: string,
  payloadPieces?: readonly string[],
) => Promise<SealedPayloadDocument>;

// A companion is a property of the very function it accompanies: a format that replaces `decode`
// or `encodePayloadText` with a function of its own (spreading the rest of a built-in format) has
// none, so nothing can bypass or contradict what its function does.
const PARSED_DECODER = Symbol('savepoint.parsedDecoder');
const PAYLOAD_SEALER = Symbol('savepoint.payloadSealer');
const PAIRED_WITH = Symbol('savepoint.pairedWith');

function withCompanion<F extends object>(fn: F, key: symbol, companion: unknown): F {
  Object.defineProperty(fn, key, { value: companion });
  return fn;
}

function withParsedDecoder<P>(decode: DocumentFormat<P>['decode'], parsed: ParsedDecoder<P>): DocumentFormat<P>['decode'] {
  return withCompanion(decode, PARSED_DECODER, parsed);
}

/**
 * @internal `format.decode` for a document already parsed — a split snapshot reassembled from its
 * parts — with the same validation and checksum, when the format is a JSON document format
 * whose `decode` is its own; else undefined (the caller encodes the document and decodes the bytes).
 */
export function parsedDecoderOf<P>(format: DocumentFormat<P>): ParsedDecoder<P> | undefined {
  return (format.decode as { [PARSED_DECODER]?: ParsedDecoder<P> })[PARSED_DECODER];
}

/**
 * @internal The companion of `format.encodePayloadText`: the same sealed document as a JSON object
 * (big payload strings shared with the text's pieces, not copied), its integrity block and its
 * length in bytes, computed without encoding it whole (the writer splits it into parts).
 * Undefined unless `encodePayloadText` is a JSON document format's own.
 */
export function payloadSealerOf<P>(format: DocumentFormat<P>): PayloadSealer<P> | undefined {
  return (format.encodePayloadText as { [PAYLOAD_SEALER]?: PayloadSealer<P> } | undefined)?.[PAYLOAD_SEALER];
}

type Validate = (doc: unknown) => ReturnType<DocumentValidator> | Promise<ReturnType<DocumentValidator>>;

function encodeText<P, D extends JsonObject>(
  options: CompiledJsonDocumentOptions<P, D>,
  validate: Validate,
  loaded: () => DocumentValidator | undefined,
  member: string,
): Required<Pick<DocumentFormat<P>, 'encodePayloadText' | 'encodePayloadTextSync'>> {
  // The document is validated with this block in place of its seal (one object for every write: validators only read it).
  const placeholder = { format_version: options.formatVersion ?? FORMAT_VERSION, algorithm: 'sha256', checksum: CHECKSUM_PLACEHOLDER };
  const headerDocument = (header: Omit<SnapshotDraft<P>, 'payload'>): JsonObject => {
    const document = options.toDocument(withMember(header, 'payload', null as P)) as JsonObject;
    if (!Object.hasOwn(document, member))
      throw new CheckpointError('checkpoint_config_invalid', `toDocument did not place the payload at "${member}"`);
    return document;
  };
  const assertHeader = (issues: ReturnType<DocumentValidator>, header: Omit<SnapshotDraft<P>, 'payload'>): void => {
    if (issues.length > 0) assertValid(issues, `snapshot ${header.sequence} of run ${header.runId}`);
  };
  // What is validated: the document with the placeholder seal (withMember, not a spread: a
  // validator walked a spread's copy four times slower, more than the rest of the check).
  const sealedShape = (document: JsonObject): JsonObject => withMember(document, INTEGRITY_FIELD, placeholder);
  const formatVersion = options.formatVersion ?? FORMAT_VERSION;
  const versionText = JSON.stringify(formatVersion);
  // The members' texts, the payload's as given: no map of them is built (this runs per checkpoint).
  const piecesOf = (document: JsonObject, payloadText: string, payloadPieces: readonly string[] | undefined): SealedPieces =>
    sealedPieces(
      Object.keys(document),
      (key) => (key === member ? (payloadPieces ?? payloadText) : document[key] === undefined ? undefined : canonicalJson(document[key])),
      versionText,
    );
  const encodePayloadText: NonNullable<DocumentFormat<P>['encodePayloadText']> = async (header, payloadText, payloadPieces) => {
    const document = headerDocument(header);
    assertHeader(await validate(sealedShape(document)), header);
    return sealPieces(piecesOf(document, payloadText, payloadPieces), formatVersion);
  };
  // The split path's companion: the same sealed document, never encoded whole.
  const seal: PayloadSealer<P> = async (header, payloadText, payloadPieces) => {
    const document = headerDocument(header);
    assertHeader(await validate(sealedShape(document)), header);
    return sealMembersUnencoded(membersOf(document, member, payloadPieces ?? payloadText), formatVersion);
  };
  const encodePayloadTextSync: NonNullable<DocumentFormat<P>['encodePayloadTextSync']> = (header, payloadText, payloadPieces) => {
    const validator = loaded();
    if (!validator || !canHashSync) return undefined;
    const document = headerDocument(header);
    assertHeader(validator(sealedShape(document)), header);
    return sealPiecesSync(piecesOf(document, payloadText, payloadPieces), formatVersion);
  };
  return {
    encodePayloadText: withCompanion(encodePayloadText, PAYLOAD_SEALER, seal),
    encodePayloadTextSync: withCompanion(encodePayloadTextSync, PAIRED_WITH, encodePayloadText),
  };
}

/**
 * @internal `format.encodePayloadTextSync` when it may stand in for `format.encodePayloadText`:
 * always for a format's own pair, never for a built-in one carried by a spread next to an
 * `encodePayloadText` of the user's own (the sync one would bypass it).
 */
export function payloadTextSyncEncoderOf<P>(format: DocumentFormat<P>): DocumentFormat<P>['encodePayloadTextSync'] {
  const sync = format.encodePayloadTextSync;
  if (!sync) return undefined;
  const pairedWith = (sync as { [PAIRED_WITH]?: unknown })[PAIRED_WITH];
  return pairedWith === undefined || pairedWith === format.encodePayloadText ? sync : undefined;
}

/** The top-level members of a `payloadMember` document as canonical texts, the payload's as given (whole or in pieces). */
function membersOf(document: JsonObject, member: string, payload: MemberText): Map<string, MemberText> {
  const members = new Map<string, MemberText>();
  for (const key of Object.keys(document)) {
    const value = document[key];
    if (key !== INTEGRITY_FIELD && key !== member && value !== undefined) members.set(key, canonicalJson(value));
  }
  members.set(member, payload);
  return members;
}

/**
 * {@link sealMembers} without the bytes: the same checksum, hashed chunk by chunk while the
 * pieces are encoded (`sha256HexAndLengthOfPiecesSync`), the same length, and the sealed
 * document's text in pieces, big strings and the payload's text shared. Where no incremental
 * hash exists the bytes are encoded once to be hashed, then let go.
 */
async function sealMembersUnencoded(
  members: ReadonlyMap<string, string | readonly string[]>,
  formatVersion = FORMAT_VERSION,
): Promise<SealedPayloadDocument> {
  const { pieces, gap } = piecesOfMembers(members, JSON.stringify(formatVersion));
  let sealed = sha256HexAndLengthOfPiecesSync(pieces);
  if (!sealed) {
    const { buffer, length } = encodePieces(pieces, 0);
    sealed = { hex: await sha256Hex(buffer.subarray(0, length)), bytes: length };
  }
  const integrity: Integrity = { format_version: formatVersion, algorithm: 'sha256', checksum: sealed.hex };
  const text = pieces.slice(0, gap);
  text.push(`${CHECKSUM_OPEN}${sealed.hex}",`);
  for (let i = gap; i < pieces.length; i++) text.push(pieces[i]!); // not a spread: there may be very many
  // Member by member, in canonical key order (the order a parse of the stored bytes gives): a
  // large member's text is parsed as it is, never joined with the others into one more copy.
  const document = (): JsonObject => {
    const keys = [...members.keys(), INTEGRITY_FIELD];
    sortKeys(keys);
    const out: JsonObject = {};
    for (const key of keys) {
      const value = key === INTEGRITY_FIELD ? undefined : members.get(key)!;
      if (value === undefined)
        out[key] = { algorithm: integrity.algorithm, checksum: integrity.checksum, format_version: integrity.format_version };
      else out[key] = typeof value === 'string' ? parseJson(value, `member ${key}`) : parseJsonPieces(value, `member ${key}`);
    }
    return out;
  };
  return { text, document, integrity, bytes: sealed.bytes + CHECKSUM_SPAN };
}
