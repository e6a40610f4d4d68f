import { CheckpointError } from './errors.js';
import type { Snapshot, TriggerRecord } from './snapshot.js';

/** Throws unless `s` looks like a snapshot as far as this reads it (an id and a list of trigger records). */
function assertSnapshotArgument(s: unknown, name: string): asserts s is Snapshot<unknown> {
  const ok =
    typeof s === 'object' &&
    s !== null &&
    typeof (s as Snapshot<unknown>).id === 'string' &&
    Array.isArray((s as Snapshot<unknown>).sourceDetails);
  if (!ok) throw new CheckpointError('checkpoint_config_invalid', `coalescedTriggers: ${name} must be a snapshot`);
}

/**
 * The triggers coalesced into each snapshot of a run, wherever they are recorded, by snapshot
 * id. On a profile with immutable history a trigger coalesced into a snapshot after its
 * history entry was written is in `latest` only, and later in the next entry, tagged
 * `coalesced_into` (docs/writing.md, "Where coalesced triggers go"). So a snapshot's
 * triggers are its own records (those without `coalesced_into`), then the records other
 * entries carry for it — or `latest`'s own records when `latest` holds it with a longer list
 * (not carried yet). Records a snapshot carries for its predecessor are not its own.
 *
 * @example
 * ```ts
 * const coalesced = coalescedTriggers(history, latest);
 * for (const s of history) console.log(s.sequence, s.source, coalesced.get(s.id)?.map((t) => t.source));
 * ```
 */
export function coalescedTriggers(history: readonly Snapshot<unknown>[], latest?: Snapshot<unknown>): Map<string, TriggerRecord[]> {
  if (!Array.isArray(history as unknown))
    throw new CheckpointError('checkpoint_config_invalid', 'coalescedTriggers: history must be an array of snapshots');
  history.forEach((s: unknown, i) => assertSnapshotArgument(s, `history[${i}]`));
  if (latest !== undefined) assertSnapshotArgument(latest, 'latest');
  const out = new Map<string, TriggerRecord[]>();
  const listOf = (id: string): TriggerRecord[] => {
    let list = out.get(id);
    if (!list) out.set(id, (list = []));
    return list;
  };
  for (const s of history) listOf(s.id).push(...s.sourceDetails.filter((r) => r.coalesced_into === undefined));
  for (const s of history) {
    for (const r of s.sourceDetails) {
      if (r.coalesced_into === undefined || r.coalesced_into === s.id) continue;
      const { coalesced_into: into, ...record } = r;
      listOf(into).push(record);
    }
  }
  if (latest) {
    const own = latest.sourceDetails.filter((r) => r.coalesced_into === undefined);
    if (own.length > listOf(latest.id).length) out.set(latest.id, own);
  }
  return out;
}
