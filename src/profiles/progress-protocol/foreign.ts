/**
 * `.ccc-progress.md` as the protocol's own tool (`/ccc:checkpoint`, the stop hook) writes
 * it — without savepoint's metadata comment, or rewritten since savepoint wrote it: read by
 * progress-protocol.md's own rules, never dropped on savepoint's next rewrite, sealed as it
 * is on import.
 */
import { canonicalJson } from '../../codec/canonical-json.js';
import type { EncodedSnapshot, ForeignRead, ForeignReadWarning } from '../../contract/document-format.js';
import { gunzip, isGzip } from '../../codec/gzip.js';
import { sha256Hex } from '../../codec/sha256.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../contract/errors.js';
import { FORMAT_VERSION, type Snapshot } from '../../contract/snapshot.js';
import { liberalUtc, rawSections } from '../handoff-markdown/foreign-text.js';
import { lacksOffset } from '../foreign-json.js';
import { headingOf, normalizeNewlines, splitSections } from '../handoff-markdown/markdown.js';
import type { KeyInfo } from '../../contract/layout.js';
import { importedSnapshotId } from '../snapshot-lifecycle/import.js';
import { isProgressSectionKey, parseProgress, PROGRESS_HEADER_LINE, SAVEPOINT_META_LINE } from './codec.js';
import { PROGRESS_STATUSES, PROGRESS_TRIGGERS, ProgressMetaSchema, type ProgressDocument, type ProgressMeta } from './model.js';
import { progressChecksum } from './checksum.js';

/** The trigger of a progress file another tool wrote: the protocol's explicit hand-off. */
export const FOREIGN_PROGRESS_SOURCE = 'handoff_request';
/** `created_at` of a progress file whose `**Session:**` line is not a time. */
export const UNKNOWN_SESSION_TIME = '1970-01-01T00:00:00Z';

/**
 * A `**Session:**` line people write by hand (`Dec 14, 2025 3:30 PM`, `Sunday 14 December 2025
 * 15:30 UTC`), read as UTC when JavaScript's date parser reads it; `undefined` otherwise. A
 * line that already names a zone keeps it.
 */
export function humanSessionTime(session: string): string | undefined {
  const text = session.trim();
  if (!/\d/.test(text) || !/[A-Za-z]/.test(text)) return undefined;
  const zoned = /(?:\b(?:UTC|GMT|Z)\b|[+-]\d{2}:?\d{2}\s*$)/i.test(text);
  const ms = Date.parse(zoned ? text : `${text} UTC`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

const plainText = (bytes: Uint8Array, where: string): string => utf8Decode(isGzip(bytes) ? gunzip(bytes, where) : bytes, where);

/** Where a progress file lives: the layout's run of a key. */
export type ProgressLocator = (where: string) => KeyInfo | undefined;

/**
 * `decodeForeign` of the progress format: a `.ccc-progress.md` without savepoint's metadata
 * comment (`checkpoint_unsealed`; `checkpoint_foreign_seal` for a comment that is not
 * savepoint's) is read by the spec's rules — the `**Issue:**` line and the Continuation
 * Prompt required, sections in any order, extra sections kept — as snapshot 1, trigger
 * `handoff_request`, status `blocked` when it lists blockers (else `in_progress`), created at
 * its `**Session:**` time (any ISO 8601 form; the epoch when it is not a time). The file is
 * the run's single artifact, which the protocol's tool rewrites: one savepoint sealed and
 * that changed since is the newest truth (`checkpoint_integrity_mismatch`, savepoint's
 * bookkeeping kept).
 */
export function progressForeignReader(
  locate: ProgressLocator,
): (bytes: Uint8Array, where: string) => Promise<ForeignRead<ProgressDocument>> {
  return async (bytes, where) => {
    const text = plainText(bytes, where);
    const { document, meta } = parseProgress(text, where);
    const runId = locate(where)?.runId;
    if (runId === undefined)
      throw new CheckpointError('checkpoint_schema_invalid', `${where} is not a progress file of this layout: its place names the run`, {
        details: { where },
      });
    const warnings: ForeignReadWarning[] = [];
    const ours = ProgressMetaSchema.safeParse(meta);
    const book = ours.success ? ours.data : undefined;
    if (book) {
      if ((await progressChecksum(document, book)) !== book.integrity.checksum) warnings.push('checkpoint_integrity_mismatch');
    } else {
      warnings.push(meta === undefined ? 'checkpoint_unsealed' : 'checkpoint_foreign_seal');
    }
    const createdAt = book?.created_at ?? liberalUtc(document.session) ?? humanSessionTime(document.session) ?? UNKNOWN_SESSION_TIME;
    if (!book?.created_at && lacksOffset(document.session)) warnings.push('checkpoint_time_without_offset');
    const snapshot: Snapshot<ProgressDocument> = {
      id: book?.snapshot_id ?? (await importedSnapshotId(createdAt, canonicalJson(document))),
      runId,
      sequence: book?.sequence ?? 1,
      createdAt,
      source: book && Object.hasOwn(PROGRESS_TRIGGERS, book.source) ? book.source : FOREIGN_PROGRESS_SOURCE,
      sourceDetails: book?.source_details ?? [],
      ...(book?.priority ? { priority: book.priority } : {}),
      status:
        book && (PROGRESS_STATUSES as readonly string[]).includes(book.status)
          ? book.status
          : document.blockers.length > 0
            ? 'blocked'
            : 'in_progress',
      payload: document,
      integrity: { format_version: FORMAT_VERSION, algorithm: 'sha256', checksum: await sha256Hex(utf8Encode(text)) },
    };
    return { snapshot, warnings };
  };
}

/** Lines of the part before the first `##` section that another tool wrote (not the title, the three header lines, savepoint's comment or blank lines). */
function foreignPreamble(lines: readonly string[]): string[] {
  const { preamble } = splitSections(lines, 2, 2);
  return preamble.filter(
    (l) => l.trim() !== '' && !PROGRESS_HEADER_LINE.test(l) && !SAVEPOINT_META_LINE.test(l) && headingOf(l)?.level !== 1,
  );
}

/** `text` with its metadata comment replaced by (or, without one, given) `meta`'s, right under the title. */
function withMeta(text: string, meta: ProgressMeta): string {
  const lines = normalizeNewlines(text)
    .split('\n')
    .filter((l) => !SAVEPOINT_META_LINE.test(l));
  const comment = `<!-- savepoint: ${canonicalJson(meta)} -->`;
  const at = headingOf(lines[0] ?? '')?.level === 1 ? 1 : 0;
  return [...lines.slice(0, at), comment, ...lines.slice(at)].join('\n');
}

/** `meta` with its checksum over `text`'s document. */
async function sealed(
  text: string,
  meta: Omit<ProgressMeta, 'integrity'> & { integrity: { format_version: string; algorithm: 'sha256' } },
): Promise<{ meta: ProgressMeta; document: ProgressDocument }> {
  const { document } = parseProgress(text, 'progress file');
  return { meta: { ...meta, integrity: { ...meta.integrity, checksum: await progressChecksum(document, meta) } }, document };
}

/**
 * `keepForeignFields` of the progress format: what the protocol's tool (or a person) wrote in
 * the file about to be replaced that savepoint's new file lacks — lines before the first
 * section other than the title and the three header lines (a `**Branch:**` line, a note),
 * and `##` sections the spec does not define — goes into the new file exactly as written
 * (the lines under the header, the sections at the end), sealed again over them.
 */
export async function keepProgressForeignFields(previous: Uint8Array, next: Uint8Array): Promise<Uint8Array> {
  let oldLines: string[];
  try {
    const old = plainText(previous, 'previous progress file');
    parseProgress(old, 'previous progress file');
    oldLines = normalizeNewlines(old).split('\n');
  } catch {
    return next; // an unreadable previous file has nothing to keep
  }
  const text = utf8Decode(next, 'progress file');
  const lines = text.split('\n');
  const present = new Set(splitSections(lines, 2, 2).sections.map((s) => s.key));
  const preamble = foreignPreamble(oldLines).filter((l) => !lines.includes(l));
  const sections = rawSections(oldLines, 2, 2).filter((s) => !isProgressSectionKey(s.key) && !present.has(s.key));
  if (preamble.length === 0 && sections.length === 0) return next;
  const { meta } = parseProgress(text, 'progress file');
  const ours = ProgressMetaSchema.safeParse(meta);
  const after = lines.findIndex((l) => /^\*\*execution mode/i.test(l));
  const at = after >= 0 ? after + 1 : lines.findIndex((l) => headingOf(l)?.level === 2);
  const merged = [...lines.slice(0, at), ...preamble, ...lines.slice(at)].join('\n').replace(/\n+$/, '');
  const out = `${[merged, ...sections.map((s) => s.text)].join('\n\n')}\n`;
  if (!ours.success) return utf8Encode(out);
  return utf8Encode(withMeta(out, (await sealed(out, ours.data)).meta));
}

/** Bookkeeping of {@link sealProgressAsIs} for a file that has none. */
export interface ProgressSealOptions {
  readonly sequence?: number;
  readonly source?: string;
  readonly status?: string;
  readonly snapshotId?: string;
}

/**
 * Seals a `.ccc-progress.md` another tool wrote (or rewrote since savepoint sealed it) as it
 * is: every line kept, savepoint's metadata comment put under the title (replacing an
 * earlier one) with the bookkeeping of the seal it had, else `options`, else what a
 * tolerant read derives. The result reads strictly, without a warning.
 */
export async function sealProgressAsIs(
  bytes: Uint8Array,
  where: string,
  locate: ProgressLocator,
  options: ProgressSealOptions = {},
): Promise<EncodedSnapshot<ProgressDocument>> {
  const { snapshot, warnings } = await progressForeignReader(locate)(bytes, where);
  const hadSeal = warnings.length === 0 || warnings.includes('checkpoint_integrity_mismatch');
  const text = plainText(bytes, where);
  const pick = <T>(own: T, given: T | undefined): T => (hadSeal || given === undefined ? own : given);
  const header = {
    snapshot_id: pick(snapshot.id, options.snapshotId),
    run_id: snapshot.runId,
    sequence: pick(snapshot.sequence, options.sequence),
    created_at: snapshot.createdAt,
    source: pick(snapshot.source, options.source),
    ...(snapshot.sourceDetails.length > 0 ? { source_details: snapshot.sourceDetails } : {}),
    ...(snapshot.priority ? { priority: snapshot.priority } : {}),
    status: pick(snapshot.status, options.status),
    integrity: { format_version: FORMAT_VERSION, algorithm: 'sha256' as const },
  };
  const { meta, document } = await sealed(text, header);
  const out = withMeta(text, meta);
  return {
    bytes: utf8Encode(out.endsWith('\n') ? out : `${out}\n`),
    snapshot: {
      ...snapshot,
      id: meta.snapshot_id,
      sequence: meta.sequence,
      source: meta.source,
      status: meta.status,
      payload: document,
      integrity: meta.integrity,
    },
  };
}
