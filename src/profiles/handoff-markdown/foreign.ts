/**
 * Hand-offs other tools write: read by handoff-markdown.md's own rules, never dropped on
 * savepoint's next rewrite, and sealed as they are on import.
 */
import type { EncodedSnapshot, ForeignRead, ForeignReadWarning } from '../../contract/document-format.js';
import { gunzip, gzip, isGzip } from '../../codec/gzip.js';
import { sha256Hex } from '../../codec/sha256.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../contract/errors.js';
import { FORMAT_VERSION, type Integrity, type Snapshot } from '../../contract/snapshot.js';
import { assertValid } from '../../codec/document-validator.js';
import { LIFECYCLE_STATUSES } from '../default-profile.js';
import type { KeyInfo } from '../../contract/layout.js';
import { parseHandoffUnchecked, validateHandoffDocument } from './codec.js';
import { base64urlOfHex, liberalUtc, rawSections } from './foreign-text.js';
import { lacksOffset } from '../foreign-json.js';
import { editFrontMatter, frontMatterBlocks, splitFrontMatterText } from './front-matter-text.js';
import type { HandoffPayload, LegacyStoredHandoff } from './model.js';
import {
  COALESCED_KEY,
  handoffChecksum,
  handoffSealDigest,
  parseSealLine,
  payloadOf,
  SEAL_KEY,
  sealLine,
  type HandoffSeal,
} from './seal.js';
import { HANDOFF_TRIGGERS } from './triggers.js';

/** The trigger of a hand-off another tool wrote: it was written for a next session. */
export const FOREIGN_HANDOFF_SOURCE = 'session_break';
/** The status of a hand-off another tool wrote. */
export const FOREIGN_HANDOFF_STATUS = 'in_progress';

/** Front-matter keys the spec defines. */
const SPEC_KEYS = ['checkpoint', 'created', 'anchor'];
/** Keys an earlier savepoint wrote as separate front-matter keys (read as savepoint's only beside its `integrity` object and `run_id`). */
const LEGACY_KEYS = ['run_id', 'sequence', 'source', 'source_details', 'priority', 'status', 'integrity'];
/** Keys by which a front matter says another tool sealed it in its own way. */
const FOREIGN_SEAL_KEYS = ['integrity', 'checksum', 'hash', 'sha256', 'digest', 'signature'];
/** Section keys the spec defines (and the Essential Information heading over six of them). */
const SPEC_SECTION_KEYS = new Set([
  'problem',
  'sessionintent',
  'essentialinformation',
  'decisions',
  'technicalcontext',
  'playbyplay',
  'artifacttrail',
  'currentstate',
  'nextactions',
  'userrules',
]);

interface Bookkeeping {
  readonly sequence: number;
  readonly source: string;
  readonly status: string;
  readonly priority?: HandoffSeal['priority'];
}

const isLegacy = (fm: Record<string, unknown>): boolean =>
  fm[SEAL_KEY] === undefined && typeof fm.integrity === 'object' && fm.integrity !== null && fm.run_id !== undefined;
const validTrigger = (s: unknown): s is string => typeof s === 'string' && Object.hasOwn(HANDOFF_TRIGGERS, s);
const validStatus = (s: unknown): s is string => typeof s === 'string' && (LIFECYCLE_STATUSES as readonly string[]).includes(s);

/** The number an id ends with (`chk-003` → 3, `session-abc-012` → 12). */
function trailingNumber(id: string): number | undefined {
  const m = /(\d{1,15})$/.exec(id);
  return m && Number(m[1]) >= 1 ? Number(m[1]) : undefined;
}

function plainText(bytes: Uint8Array, where: string): string {
  return utf8Decode(isGzip(bytes) ? gunzip(bytes, where) : bytes, where);
}

/** Whether savepoint's seal (current or earlier) still holds over the parsed document, and its bookkeeping. */
async function sealState(
  doc: Record<string, unknown>,
  fm: Record<string, unknown>,
): Promise<{ book?: Bookkeeping; intact: boolean } | undefined> {
  const seal = parseSealLine(fm[SEAL_KEY]);
  if (seal) return { book: seal, intact: base64urlOfHex(await handoffSealDigest(doc, seal)) === seal.checksum };
  if (!isLegacy(fm)) return undefined;
  const legacy = fm as Partial<LegacyStoredHandoff['frontMatter']>;
  const intact = (await handoffChecksum(doc)) === (legacy.integrity as { checksum?: unknown } | undefined)?.checksum;
  const sequence = Number.isInteger(legacy.sequence) && legacy.sequence! >= 1 ? legacy.sequence! : undefined;
  return sequence === undefined
    ? { intact }
    : {
        intact,
        book: {
          sequence,
          source: String(legacy.source),
          status: String(legacy.status),
          ...(legacy.priority ? { priority: legacy.priority } : {}),
        },
      };
}

/**
 * `decodeForeign` of the hand-off format: a document without savepoint's seal (another
 * tool's, or a person's) is read by the spec's own rules — front matter `checkpoint`,
 * `created` (any ISO 8601 offset and precision), optional `anchor`; the fixed sections in
 * any order, extra sections and unknown keys allowed — as snapshot number N of `chk-N`
 * (else 1), trigger `session_break`, status `in_progress`, with `checkpoint_unsealed` (or
 * `checkpoint_foreign_seal` when it carries its own `integrity` / `checksum` key). A sealed
 * `latest.md` edited since is the newest truth (`checkpoint_integrity_mismatch`, savepoint's
 * bookkeeping kept); a sealed `chk-NNN.md` whose content changed stays refused.
 */
export function handoffForeignReader(
  locate: (where: string) => KeyInfo | undefined,
): (bytes: Uint8Array, where: string) => Promise<ForeignRead<HandoffPayload>> {
  return async (bytes, where) => {
    const text = plainText(bytes, where);
    const parsed = parseHandoffUnchecked(text, where);
    // A `created` without an offset is read as UTC (with a warning) before the spec's pattern is checked.
    const offsetless = typeof parsed.created === 'string' && lacksOffset(parsed.created);
    const doc = offsetless ? { ...parsed, created: liberalUtc(String(parsed.created))! } : parsed;
    assertValid(validateHandoffDocument(doc), where);
    const located = locate(where);
    if (located?.runId === undefined)
      throw new CheckpointError('checkpoint_schema_invalid', `${where} is not a hand-off file of this layout: its folder names the run`, {
        details: { where },
      });
    const fm = (doc.frontMatter ?? {}) as Record<string, unknown>;
    const warnings: ForeignReadWarning[] = [];
    const state = await sealState(doc, fm);
    if (state) {
      if (!state.intact && located.kind !== 'latest')
        throw new CheckpointError(
          'checkpoint_integrity_mismatch',
          `${where}: savepoint sealed this hand-off and its content changed since`,
          { details: { where } },
        );
      if (!state.intact) warnings.push('checkpoint_integrity_mismatch');
    } else {
      warnings.push(FOREIGN_SEAL_KEYS.some((k) => Object.hasOwn(fm, k)) ? 'checkpoint_foreign_seal' : 'checkpoint_unsealed');
    }
    const createdAt = liberalUtc(String(doc.created));
    if (createdAt === undefined)
      throw new CheckpointError('checkpoint_schema_invalid', `${where}: created is not an ISO 8601 time`, { details: { where } });
    if (offsetless) warnings.push('checkpoint_time_without_offset');
    const book = state?.book;
    // An unsealed history file's name is its id and number (a hand-off kept from latest.md
    // keeps its own `checkpoint:` line, e.g. `handoff-final`, inside chk-NNN.md).
    const named = located.kind === 'history' && !book ? located : undefined;
    const id = named?.snapshotId ?? String(doc.checkpoint);
    const snapshot: Snapshot<HandoffPayload> = {
      id,
      runId: located.runId,
      sequence: book?.sequence ?? named?.sequence ?? trailingNumber(id) ?? located.sequence ?? 1,
      createdAt,
      source: validTrigger(book?.source) ? book.source : FOREIGN_HANDOFF_SOURCE,
      sourceDetails: [],
      ...(book?.priority ? { priority: book.priority } : {}),
      status: validStatus(book?.status) ? book.status : FOREIGN_HANDOFF_STATUS,
      payload: payloadOf(doc),
      integrity: { format_version: FORMAT_VERSION, algorithm: 'sha256', checksum: await sha256Hex(utf8Encode(text)) },
    };
    return { snapshot, warnings };
  };
}

/** Front-matter keys savepoint owns in a document: its seal line and, in a document an earlier savepoint sealed, the separate keys. */
function savepointKeys(fm: Record<string, unknown>): Set<string> {
  return new Set([SEAL_KEY, COALESCED_KEY, ...(isLegacy(fm) ? LEGACY_KEYS : [])]);
}

/** The body lines of a document (after its front matter). */
const bodyLines = (text: string): string[] => splitFrontMatterText(text)?.tail.slice(1) ?? [];

/**
 * `keepForeignFields` of the hand-off format, for `latest.md`: what another tool wrote in
 * the file about to be replaced — front-matter keys (and comments) that are neither the
 * spec's nor savepoint's, sections the spec does not define that the new document lacks,
 * and text between the front matter and the first section — goes into the new file exactly
 * as written, and the new file is sealed again over it.
 */
export async function keepHandoffForeignFields(previous: Uint8Array, next: Uint8Array): Promise<Uint8Array> {
  let old: string;
  let oldDoc: Record<string, unknown>;
  try {
    old = plainText(previous, 'previous hand-off');
    oldDoc = parseHandoffUnchecked(old, 'previous hand-off');
  } catch {
    return next; // an unreadable previous file has nothing to keep
  }
  const split = splitFrontMatterText(old);
  if (!split) return next;
  const owned = new Set([...SPEC_KEYS, ...savepointKeys((oldDoc.frontMatter ?? {}) as Record<string, unknown>)]);
  const yaml = frontMatterBlocks(split.yaml)
    .filter((b) => b.key === undefined || !owned.has(b.key))
    .flatMap((b) => b.lines);
  while (yaml.length > 0 && yaml[yaml.length - 1]!.trim() === '') yaml.pop();

  const text = utf8Decode(next, 'hand-off');
  const body = bodyLines(old);
  const firstSection = rawSections(body, 3, 2)[0];
  const present = new Set(rawSections(bodyLines(text), 3, 1).map((s) => s.key));
  // The text before the first section (a `# Title` and a note), unless the new document already carries it as a section.
  let preamble = body.slice(0, firstSection ? firstSection.line : body.length);
  if (rawSections(preamble, 1, 1).some((s) => present.has(s.key))) preamble = [];
  while (preamble.length > 0 && preamble[0]!.trim() === '') preamble.shift();
  while (preamble.length > 0 && preamble[preamble.length - 1]!.trim() === '') preamble.pop();
  const sections = rawSections(body, 3, 2).filter((s) => !SPEC_SECTION_KEYS.has(s.key) && !present.has(s.key));
  if (yaml.length === 0 && preamble.length === 0 && sections.length === 0) return next;
  return utf8Encode(
    await resealHandoff(
      text,
      yaml,
      preamble,
      sections.map((s) => s.text),
    ),
  );
}

/**
 * `text` (a hand-off savepoint just rendered, sealed) with `yaml` lines added to its front
 * matter, `preamble` lines right after it and `sections` appended, sealed again.
 */
async function resealHandoff(
  text: string,
  yaml: readonly string[],
  preamble: readonly string[],
  sections: readonly string[],
): Promise<string> {
  const doc = parseHandoffUnchecked(text, 'hand-off');
  const seal = parseSealLine((doc.frontMatter as Record<string, unknown> | undefined)?.[SEAL_KEY]);
  if (!seal) return text;
  const build = (line: string): string => {
    const edited = editFrontMatter(text, new Set([SEAL_KEY]), [...yaml, `${SEAL_KEY}: ${line}`])!;
    const parts = splitFrontMatterText(edited)!;
    const after = parts.tail.slice(1).join('\n').replace(/\n+$/, '');
    const head = [...parts.head, ...parts.yaml, parts.tail[0]!].join('\n');
    return `${[head, ...(preamble.length > 0 ? [preamble.join('\n')] : []), after.replace(/^\n+/, ''), ...sections].join('\n\n')}\n`;
  };
  const { checksum: _old, ...unsealed } = seal;
  const merged = parseHandoffUnchecked(build(sealLine(unsealed)), 'hand-off');
  const digest = await handoffSealDigest(merged, unsealed);
  return build(sealLine({ ...unsealed, checksum: base64urlOfHex(digest) }));
}

/** Bookkeeping of {@link sealHandoffAsIs} for a document that has none. */
export interface HandoffSealOptions {
  readonly sequence?: number;
  readonly source?: string;
  readonly status?: string;
}

/**
 * Seals a hand-off another tool wrote (or edited since savepoint sealed it) as it is: every
 * line it wrote stays, savepoint's seal line is added at the end of the front matter (an
 * earlier seal line, or an earlier savepoint's separate keys, replaced), with the
 * bookkeeping of the seal it had, else `options`, else what a tolerant read derives. The
 * result reads strictly, without a warning, and any later edit is caught.
 */
export async function sealHandoffAsIs(
  bytes: Uint8Array,
  where: string,
  locate: (where: string) => KeyInfo | undefined,
  options: HandoffSealOptions = {},
): Promise<EncodedSnapshot<HandoffPayload>> {
  const compressed = isGzip(bytes);
  const { snapshot } = await handoffForeignReader(locate)(bytes, where);
  const text = plainText(bytes, where);
  const doc = parseHandoffUnchecked(text, where);
  const fm = (doc.frontMatter ?? {}) as Record<string, unknown>;
  const hadSeal = (await sealState(doc, fm))?.book !== undefined;
  const seal: HandoffSeal = {
    formatVersion: FORMAT_VERSION,
    sequence: hadSeal ? snapshot.sequence : (options.sequence ?? snapshot.sequence),
    source: hadSeal ? snapshot.source : (options.source ?? snapshot.source),
    status: hadSeal ? snapshot.status : (options.status ?? snapshot.status),
    ...(snapshot.priority ? { priority: snapshot.priority } : {}),
  };
  const remove = savepointKeys(fm);
  const withLine = (line: string): string => editFrontMatter(text, remove, [`${SEAL_KEY}: ${line}`])!;
  const digest = await handoffSealDigest(parseHandoffUnchecked(withLine(sealLine(seal)), where), seal);
  const sealedText = withLine(sealLine({ ...seal, checksum: base64urlOfHex(digest) }));
  const integrity: Integrity = { format_version: FORMAT_VERSION, algorithm: 'sha256', checksum: digest };
  const plain = utf8Encode(sealedText);
  return {
    bytes: compressed ? gzip(plain) : plain,
    snapshot: {
      ...snapshot,
      sequence: seal.sequence,
      source: seal.source,
      status: seal.status,
      sourceDetails: [],
      payload: payloadOf(parseHandoffUnchecked(sealedText, where)),
      integrity,
    },
  };
}
