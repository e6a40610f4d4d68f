import type { CheckpointError } from '../contract/errors.js';
import type { KeyInfo } from '../contract/layout.js';
import type { Snapshot } from '../contract/snapshot.js';

/**
 * Why a stored file was refused, in one line a person can act on: the first failing field
 * and what is wrong with it (`/last_activity Invalid ISO datetime`), or the whole reason when
 * the error names no field. Resume's skipped files and `verify`'s findings both use it, so the
 * two say the same thing about the same file. Never payload contents: the codec's messages
 * name paths and rules, not values.
 */
export function refusalIssue(err: Pick<CheckpointError, 'reasonCode' | 'message'>, key: string): string {
  const prefix = `${err.reasonCode}: `;
  let text = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
  const schema = / does not match its schema: (.*)$/s.exec(text);
  // The validators list up to five issues joined by "; ": the first one is what to fix first.
  if (schema) return schema[1]!.split('; ')[0]!.replace(/ \(\+\d+ more\)$/, '');
  for (const where of [`${key}: `, `${key} `]) if (text.startsWith(where)) text = text.slice(where.length);
  return text;
}

/**
 * What is wrong with where a decoded snapshot was found, or `undefined` when it belongs
 * there: its run id against the run the file's place names (a run folder copied or renamed,
 * `plan_number "2"` in `02-CHECKPOINT.json`), and a history name's sequence, id and trigger,
 * or a batch file's range, against the document. A schema-level disagreement about identity,
 * not a broken seal: the bytes are what their writer sealed.
 */
export function identityIssue(snapshot: Snapshot<unknown>, runId: string, key: string, info: KeyInfo | undefined): string | undefined {
  if (snapshot.runId !== runId)
    return `the document names run "${snapshot.runId}", its place in the store names run "${runId}" (a copied or renamed run keeps its old id inside)`;
  if (info?.kind === 'history') {
    if (info.sequence !== undefined && info.sequence !== snapshot.sequence)
      return `the file name says sequence ${info.sequence}, the document ${snapshot.sequence}`;
    if (info.snapshotId !== undefined && info.snapshotId !== snapshot.id)
      return `the file name says snapshot ${info.snapshotId}, the document ${snapshot.id}`;
    if (info.source !== undefined && info.source !== snapshot.source)
      return `the file name says trigger ${info.source}, the document ${snapshot.source}`;
  }
  if (info?.kind === 'batch') {
    const range = batchRange(key.replace(/#\d+$/, ''));
    const first = range?.first ?? info.sequence;
    if (first !== undefined && snapshot.sequence < first)
      return `a member has sequence ${snapshot.sequence}, below the batch's first sequence ${first}`;
    if (range && snapshot.sequence > range.last)
      return `a member has sequence ${snapshot.sequence}, above the batch's last sequence ${range.last}`;
  }
  return undefined;
}

/** First and last sequence of a batch file from its name (`batch_{first}_{last}.json`, the spec's pattern), when it has that form. */
export function batchRange(key: string): { first: number; last: number } | undefined {
  const m = /(?:^|\/)batch_(\d+)_(\d+)\.json(?:\.gz)?$/.exec(key);
  return m ? { first: Number(m[1]), last: Number(m[2]) } : undefined;
}
