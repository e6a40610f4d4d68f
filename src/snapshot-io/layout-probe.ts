import type { HistoryRef, ProfileLayout } from '../contract/layout.js';

/**
 * Snapshot ids of the shapes profiles mint (snapshot-lifecycle ids and UUIDs), at both ends
 * of their alphabets: a history key that comes out the same for both of a pair does not
 * depend on the id.
 */
const SAMPLE_IDS = [
  ['cp_20000101T000000000Z_aaaaaaaaaa', 'cp_20991231T235959999Z_zzzzzzzzzz'],
  ['00000000-0000-4000-8000-000000000000', 'ffffffff-ffff-4fff-bfff-ffffffffffff'],
] as const;

/**
 * What a custom layout's history keys are made of, for a layout that does not declare it
 * ({@link ProfileLayout.historyKeyFrom}): `'sequence'` when the key does not depend on the
 * snapshot id, so the key of sequence N+1 can be computed from N and the trigger alone
 * (`cp_{NNN}_{trigger}.json`), unlike `history/<snapshot_id>.json`. Worked out once, where
 * the layout is made, by naming one entry with ids of every shape profiles mint.
 */
export function probeHistoryKeyFrom(historyKey: ((ref: HistoryRef) => string) | undefined): 'sequence' | 'id' | undefined {
  if (!historyKey) return undefined;
  try {
    const ref = { runId: 'probe-run', sequence: 12, source: 'manual' };
    return SAMPLE_IDS.every(([a, b]) => historyKey({ ...ref, id: a }) === historyKey({ ...ref, id: b })) ? 'sequence' : 'id';
  } catch {
    return 'id';
  }
}

/**
 * The history key of sequence `sequence` with trigger `source`, for a layout whose keys
 * derive from the sequence (`historyKeyFrom: 'sequence'`), before any snapshot (and so any
 * id) exists: the id is one the key does not depend on.
 */
export function historyKeyOfSequence(layout: ProfileLayout, runId: string, sequence: number, source: string): string {
  return layout.historyKey!({ runId, id: SAMPLE_IDS[0][0], sequence, source });
}

/**
 * The prefix that covers every file of `runId`: the longest common folder of the keys the
 * layout derives for the run, or `runsPrefix` for layouts whose run files share no folder.
 */
export function runListPrefix(layout: ProfileLayout, runId: string): string {
  const keys = [layout.latestKey(runId)];
  if (layout.indexKey) keys.push(layout.indexKey(runId));
  if (layout.batchKey) {
    try {
      keys.push(layout.batchKey(runId, 1, 2), layout.batchKey(runId, 900, 1000));
    } catch {
      // a layout that cannot name batches has none to list
    }
  }
  if (layout.historyKey) {
    for (const [id] of SAMPLE_IDS) {
      for (const sequence of [1, 98765]) {
        try {
          keys.push(layout.historyKey({ runId, id, sequence, source: 'manual' }));
        } catch {
          // ids the layout refuses are never written either
        }
      }
    }
  }
  let common = keys[0]!;
  for (const k of keys) {
    let i = 0;
    while (i < common.length && i < k.length && common[i] === k[i]) i++;
    common = common.slice(0, i);
  }
  const folder = common.slice(0, common.lastIndexOf('/') + 1);
  return folder.startsWith(layout.runsPrefix) ? folder : layout.runsPrefix;
}

/**
 * `layout` with {@link ProfileLayout.historyKeyFrom} stated: the same object when it says
 * (or has no history), else one that inherits everything from it and adds the probed value.
 */
export function withHistoryKeyFrom(layout: ProfileLayout): ProfileLayout {
  if (layout.historyKeyFrom !== undefined || !layout.historyKey) return layout;
  const historyKeyFrom = probeHistoryKeyFrom((ref) => layout.historyKey!(ref));
  return Object.create(layout, { historyKeyFrom: { value: historyKeyFrom, enumerable: true } }) as ProfileLayout;
}
