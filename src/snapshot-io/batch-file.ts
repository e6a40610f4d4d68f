import type { z } from 'zod';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { gunzip, isGzip } from '../codec/gzip.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { Snapshot } from '../contract/snapshot.js';
import { assertValid, documentValidator } from '../codec/document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import * as generated from '../codec/generated/batch-file.js';
import type { BatchFileSchema } from './batch-file-schema.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { Profile } from '../contract/profile.js';
import { decodeStoredSnapshot } from './read-snapshot.js';
import { assertArrayArgument } from '../contract/arguments.js';

/** The TypeScript type of {@link BatchFileSchema}: phased-workflow-github.md's `batch_{first}_{last}.json`. */
export type BatchFile = z.infer<typeof BatchFileSchema>;

/** JSON Schema of a batch file's envelope (members are checked against the profile's document schema). */
export const batchFileJsonSchema: JsonSchema = generated.jsonSchema;

const validator = documentValidator(generated.validate);

/** Builds a batch file from encoded member documents (canonical JSON bytes from a profile's `encode`) and their sequences, in order. */
export function encodeBatchFile(members: readonly { sequence: number; bytes: Uint8Array }[]): Uint8Array {
  assertArrayArgument(members, 'encodeBatchFile', 'members');
  if (members.length === 0) throw new CheckpointError('checkpoint_schema_invalid', 'a batch file needs at least one checkpoint');
  const sorted = [...members].sort((a, b) => a.sequence - b.sequence);
  const batch: BatchFile = {
    checkpoints: sorted.map((m) => parseJson(utf8Decode(m.bytes)) as JsonObject),
    batch_metadata: {
      first_sequence: sorted[0]!.sequence,
      last_sequence: sorted[sorted.length - 1]!.sequence,
      checkpoint_count: sorted.length,
    },
  };
  return utf8Encode(canonicalJson(batch));
}

/** One member of a batch file: its snapshot, or the reason it failed validation. */
export type BatchMember<P> =
  | { readonly ok: true; readonly snapshot: Snapshot<P> }
  | { readonly ok: false; readonly position: number; readonly error: CheckpointError };

/**
 * Decodes a batch file. The envelope must be valid (`checkpoint_schema_invalid`
 * otherwise); each member is decoded on its own through the profile, so one corrupt
 * member does not hide the others.
 */
export async function decodeBatchFile<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  key: string,
  stored: Uint8Array,
): Promise<BatchMember<P>[]> {
  const bytes = isGzip(stored) ? gunzip(stored, key, { maxBytes: profile.maxSnapshotBytes }) : stored;
  const envelope = parseJson(utf8Decode(bytes, key), key);
  assertValid(validator(envelope), key);
  const batch = envelope as BatchFile;
  const out: BatchMember<P>[] = [];
  for (const [position, member] of batch.checkpoints.entries()) {
    try {
      out.push({
        ok: true,
        snapshot: await decodeStoredSnapshot(storage, profile, `${key}#${position}`, utf8Encode(canonicalJson(member))),
      });
    } catch (err) {
      if (!isCheckpointError(err)) throw err;
      out.push({ ok: false, position, error: err });
    }
  }
  return out;
}
