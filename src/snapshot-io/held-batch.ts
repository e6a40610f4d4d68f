import { encodeBatchFile } from './batch-file.js';
import { isHeldLocally } from '../contract/buffered-storage.js';
import { type HeldMember, type HeldHeadJoin } from '../contract/held-batch.js';

/**
 * Joins `added` into the head's file while `storage` still holds it locally (see the module
 * comment). Returns undefined (the caller writes as usual) when the head's file already left
 * the machine, cannot be read back unchanged, or the batch would exceed `maxBytes`.
 */
export const joinHeldHead: HeldHeadJoin = async (storage, batchKey, runId, head, added, maxBytes) => {
  if (added.length === 0 || isHeldLocally(storage, head.key) !== true) return undefined;
  let held: readonly HeldMember[];
  if (head.members) held = head.members;
  else {
    // Served from the adapter's queue: no request.
    const stored = await storage.get(head.key);
    if (!stored || stored.version !== head.version) return undefined;
    held = [{ sequence: head.sequence, bytes: stored.bytes }];
  }
  const members = [...held, ...added];
  const bytes = encodeBatchFile(members);
  if (bytes.length > maxBytes) return undefined;
  return { key: batchKey(runId, members[0]!.sequence, members.at(-1)!.sequence), bytes, members, replaced: head.key };
};
