import { canonicalJson, parseJson, type JsonObject } from '../codec/canonical-json.js';
import type { PartFile } from '../codec/parts.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { CheckpointError } from '../model/errors.js';
import type { Snapshot, SnapshotDraft } from '../model/snapshot.js';
import type { Profile } from '../profiles/define-profile.js';

/** A snapshot ready to store: its main document and the part files it references. */
export interface StorableSnapshot<P> {
  /** Bytes of the main document (part references in place of moved values, if split). */
  readonly bytes: Uint8Array;
  readonly snapshot: Snapshot<P>;
  /** Part files, written create-only before the document that references them. */
  readonly parts: readonly PartFile[];
}

/** The size policy applied by {@link encodeForStorage}. */
export interface SizePolicy {
  readonly maxBytes: number;
  readonly onOversize: 'split' | 'reject';
  /** Part key of part `n`; absent when the layout has no part files. */
  readonly partKey?: (n: number) => string;
}

/**
 * Encodes a draft through the profile and applies the size limit (phased-workflow-github.md
 * `size_management`: 10 MB; "split large arrays into separate files, store references in
 * main checkpoint"). Over the limit, a JSON document is split with the profile's `splitDocument`
 * (phasedWorkflow moves `phase_outputs` first; others the largest values first) when the
 * profile allows it and its layout has part keys; otherwise `checkpoint_too_large`.
 * The checksum covers the reassembled document, so readers (`decodeStoredSnapshot`) see
 * exactly what was written.
 */
export async function encodeForStorage<P>(profile: Profile<P>, draft: SnapshotDraft<P>, policy: SizePolicy): Promise<StorableSnapshot<P>> {
  const { bytes, snapshot } = await profile.document.encode(draft);
  if (bytes.length <= policy.maxBytes) return { bytes, snapshot, parts: [] };
  const details = { sequence: draft.sequence, bytes: bytes.length, limit: policy.maxBytes };
  if (policy.onOversize === 'reject') {
    throw new CheckpointError('checkpoint_too_large', `snapshot ${draft.sequence} is ${bytes.length} bytes, over the ${policy.maxBytes}-byte limit, and profile "${profile.name}" rejects oversized snapshots`, { details });
  }
  if (!policy.partKey || profile.document.extension !== '.json') {
    throw new CheckpointError('checkpoint_too_large', `snapshot ${draft.sequence} is ${bytes.length} bytes, over the ${policy.maxBytes}-byte limit, and profile "${profile.name}" cannot split its documents`, { details });
  }
  const document = parseJson(utf8Decode(bytes), `snapshot ${draft.sequence}`) as JsonObject;
  const { main, parts } = await profile.splitDocument(document, policy.maxBytes, policy.partKey);
  return { bytes: utf8Encode(canonicalJson(main)), snapshot, parts };
}
