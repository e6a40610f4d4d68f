/**
 * Checks a run written by writer children: every acknowledged snapshot is stored and reads
 * back with its sequence, and the run's keys agree with each other the way only whole
 * batches leave them (history, `latest` and the index from the same commit — never a
 * history entry without its index entry or a `latest` ahead of the history).
 */
import { decodeRunIndex, readSnapshot } from 'savepoint/toolkit';
import { defaultProfile, listAll, type StorageAdapter } from 'savepoint';

/** What the check found, for the test's messages. */
export interface RunCheck {
  readonly history: number;
  readonly latestSequence: number;
}

export async function verifyRun(storage: StorageAdapter, runId: string, acked: ReadonlyMap<number, string>): Promise<RunCheck> {
  const layout = defaultProfile.layout;
  for (const [sequence, key] of acked) {
    const snap = await readSnapshot(storage, defaultProfile, key);
    if (!snap) throw new Error(`acknowledged snapshot #${sequence} of ${runId} is missing (${key})`);
    if (snap.sequence !== sequence) throw new Error(`${key} holds #${snap.sequence}, acknowledged as #${sequence}`);
  }
  const history = (await listAll(storage, `checkpoints/${runId}/history/`)).map((e) => e.key).sort();
  if (history.length === 0) {
    if (acked.size > 0) throw new Error(`${runId}: no history but ${acked.size} acknowledged`);
    return { history: 0, latestSequence: 0 };
  }
  const indexed = await storage.get(layout.indexKey!(runId));
  if (!indexed) throw new Error(`${runId}: history without an index (a half-applied batch)`);
  const index = decodeRunIndex(indexed.bytes);
  const inIndex = index.checkpoints.map((c) => c.file_path).sort();
  if (JSON.stringify(inIndex) !== JSON.stringify(history)) {
    throw new Error(`${runId}: index and history disagree (a half-applied batch): index ${inIndex.length}, history ${history.length}`);
  }
  const latest = await readSnapshot(storage, defaultProfile, layout.latestKey(runId));
  const newest = Math.max(...index.checkpoints.map((c) => c.sequence));
  if (!latest || latest.sequence !== newest) throw new Error(`${runId}: latest is #${latest?.sequence} but the newest history entry is #${newest} (a half-applied batch)`);
  const maxAcked = Math.max(0, ...acked.keys());
  if (newest < maxAcked) throw new Error(`${runId}: newest stored #${newest} is older than acknowledged #${maxAcked}`);
  return { history: history.length, latestSequence: latest.sequence };
}

/** `ack <seq> <key>` lines of a child → sequence → key. */
export function ackedOf(lines: readonly string[]): Map<number, string> {
  const acked = new Map<number, string>();
  for (const line of lines) {
    const m = /^ack (\d+) (\S+)$/.exec(line);
    if (m) acked.set(Number(m[1]), m[2]!);
  }
  return acked;
}
