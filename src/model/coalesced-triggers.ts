import type { Snapshot, TriggerRecord } from './snapshot.js';

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
