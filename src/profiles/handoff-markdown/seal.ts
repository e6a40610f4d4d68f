/**
 * savepoint's seal in a hand-off document: ONE front-matter line,
 *
 *     savepoint: <format_version> <sequence> <trigger> <status> [<priority>] <checksum>
 *
 * e.g. `savepoint: 1.0 3 phase_completion in_progress 3q2-7w…` (checksum: base64url of a
 * SHA-256, 43 characters). It costs at most 25 tokens with {@link estimateTokens}, so a
 * hand-off compressed to a budget still fits it once stored (`compress` reserves it). The
 * run id is not written: the file's folder names the run (`checkpoints/<run>/…`).
 * Triggers coalesced into the snapshot (rare for hand-offs) go in a second key,
 * `savepoint_coalesced`, only when there are some.
 */
import { canonicalJson } from '../../codec/canonical-json.js';
import { type JsonValue } from '../../contract/json.js';
import { sha256Hex } from '../../codec/sha256.js';
import { PRIORITIES, type Priority } from '../../contract/snapshot.js';
import { assertObjectArgument } from '../../contract/arguments.js';
import type { HandoffPayload } from './model.js';

/** The front-matter key of savepoint's seal line. */
export const SEAL_KEY = 'savepoint';
/** The front-matter key of the triggers coalesced into a snapshot (only when there are some). */
export const COALESCED_KEY = 'savepoint_coalesced';

/** What the seal line says. */
export interface HandoffSeal {
  readonly formatVersion: string;
  readonly sequence: number;
  readonly source: string;
  readonly status: string;
  readonly priority?: Priority;
  /** Base64url SHA-256 (43 characters); absent while the document is being sealed. */
  readonly checksum?: string;
}

const LINE = new RegExp(`^(\\S+) ([1-9]\\d{0,15}) ([a-z][a-z0-9_]*) ([a-z][a-z0-9_]*)(?: (${PRIORITIES.join('|')}))? ([A-Za-z0-9_-]{43})$`);

/** The seal a front-matter value holds, or `undefined` when it is not savepoint's seal line. */
export function parseSealLine(value: unknown): HandoffSeal | undefined {
  if (typeof value !== 'string') return undefined;
  const m = LINE.exec(value);
  if (!m) return undefined;
  return {
    formatVersion: m[1]!,
    sequence: Number(m[2]),
    source: m[3]!,
    status: m[4]!,
    ...(m[5] ? { priority: m[5] as Priority } : {}),
    checksum: m[6]!,
  };
}

/** The seal line's value, without the checksum when `seal.checksum` is absent. */
export function sealLine(seal: HandoffSeal): string {
  assertObjectArgument(seal, 'sealLine', 'seal');
  return [
    seal.formatVersion,
    String(seal.sequence),
    seal.source,
    seal.status,
    ...(seal.priority ? [seal.priority] : []),
    ...(seal.checksum ? [seal.checksum] : []),
  ].join(' ');
}

/**
 * The checksum of a sealed hand-off, as lower-case hex (the seal line holds its base64url): the SHA-256 of the canonical JSON of the
 * *parsed* document (front matter — every key, another tool's too — and every section, as
 * `parseHandoff` reads them) with the seal line's checksum left out. Line endings, YAML
 * quoting and blank lines do not change it; any edit of content does.
 */
export async function handoffSealDigest(parsed: Readonly<Record<string, unknown>>, seal: HandoffSeal): Promise<string> {
  assertObjectArgument(parsed, 'handoffSealDigest', 'parsed');
  assertObjectArgument(seal, 'handoffSealDigest', 'seal');
  const { checksum: _omitted, ...unsealed } = seal;
  const frontMatter = { ...(parsed.frontMatter as Record<string, JsonValue> | undefined), [SEAL_KEY]: sealLine(unsealed) };
  return sha256Hex(canonicalJson({ ...parsed, frontMatter } as unknown as JsonValue));
}

/**
 * The checksum of a hand-off document an earlier savepoint stored (still read): SHA-256 of the canonical JSON of the
 * *parsed* document (front matter and every section, as {@link parseHandoff} reads
 * them) with `integrity.checksum` left out.
 *
 * Hashing the parsed model rather than the bytes means a change of line endings
 * (CRLF ↔ LF), of YAML quoting style or of blank lines between sections still verifies,
 * while any edit of content — a word in a section, a table cell, a front-matter value,
 * a bullet added or removed — is a `checkpoint_integrity_mismatch`.
 */
export async function handoffChecksum(document: Readonly<Record<string, unknown>>): Promise<string> {
  assertObjectArgument(document, 'handoffChecksum', 'document');
  const frontMatter = { ...(document.frontMatter as Record<string, unknown> | undefined) };
  const integrity = frontMatter.integrity;
  if (integrity && typeof integrity === 'object' && !Array.isArray(integrity)) {
    const { checksum: _omitted, ...meta } = integrity as Record<string, unknown>;
    frontMatter.integrity = meta;
  }
  return sha256Hex(canonicalJson({ ...document, frontMatter }));
}

/** The payload of a parsed hand-off: everything but the header fields and the front matter. */
export function payloadOf(doc: Readonly<Record<string, unknown>>): HandoffPayload {
  const { checkpoint: _c, created: _cr, frontMatter: _f, ...payload } = doc;
  return payload as unknown as HandoffPayload;
}
