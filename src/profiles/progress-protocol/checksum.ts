import { canonicalJson } from '../../codec/canonical-json.js';
import { sha256Hex } from '../../codec/sha256.js';
import { assertObjectArgument } from '../../contract/arguments.js';
import type { Integrity } from '../../contract/snapshot.js';
import type { ProgressDocument, ProgressMeta } from './model.js';

/**
 * Checksum of a stored progress file: SHA-256 of the canonical JSON of
 * `{ document, meta }` as parsed, with `meta.integrity.checksum` left out. Line endings
 * and blank lines do not change it; any edit of content does.
 */
export async function progressChecksum(
  document: ProgressDocument,
  meta: Omit<ProgressMeta, 'integrity'> & { integrity: Omit<Integrity, 'checksum'> & { checksum?: string } },
): Promise<string> {
  assertObjectArgument(document, 'progressChecksum', 'document');
  assertObjectArgument(meta, 'progressChecksum', 'meta');
  assertObjectArgument(meta.integrity, 'progressChecksum', 'meta.integrity');
  const { checksum: _omitted, ...integrity } = meta.integrity;
  return sha256Hex(canonicalJson({ document, meta: { ...meta, integrity } }));
}
