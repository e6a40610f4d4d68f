/**
 * Checks a run written by writer children: every acknowledged snapshot is stored and reads
 * back with its sequence, and the run's keys agree with each other the way only whole
 * batches leave them (history, `latest` and the index from the same commit — never an index
 * entry without its file, a `latest` other than the newest entry, or more unindexed entries
 * than the writer's deferred index update holds back).
 */
import { decodeRunIndex, readSnapshot } from 'savepoint/toolkit';
import { indexDeferral } from '../../../src/codec/run-index.js';
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
  const inIndex = index.checkpoints.map((c) => c.file_path);
  const files = new Set(history);
  const missing = inIndex.filter((k) => !files.has(k));
  if (missing.length > 0) throw new Error(`${runId}: the index lists ${missing.length} file(s) that do not exist (a half-applied batch)`);
  // The writer rewrites a long run's index every max(1, n/16) checkpoints, n counting the run
  // when it prunes as it goes (docs/performance.md): a kill may leave that many newest entries
  // unindexed, never older ones and never more.
  const indexedTop = Math.max(0, ...index.checkpoints.map((c) => c.sequence));
  const unindexed = history.filter((k) => !inIndex.includes(k));
  let newest = indexedTop;
  for (const key of unindexed) {
    const snap = await readSnapshot(storage, defaultProfile, key);
    if (!snap || snap.sequence <= indexedTop)
      throw new Error(`${runId}: ${key} is missing from the index but not newer than it (a half-applied batch)`);
    newest = Math.max(newest, snap.sequence);
  }
  if (unindexed.length > indexDeferral(index.checkpoint_count, newest)) {
    throw new Error(
      `${runId}: ${unindexed.length} history entries are not in the index, more than the writer holds back (a half-applied batch)`,
    );
  }
  const latest = await readSnapshot(storage, defaultProfile, layout.latestKey(runId));
  if (!latest || latest.sequence !== newest)
    throw new Error(`${runId}: latest is #${latest?.sequence} but the newest history entry is #${newest} (a half-applied batch)`);
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

/**
 * {@link verifyRun} once a killed writer's last statement has landed. PostgreSQL runs a
 * statement whose client was SIGKILLed to its end — and commits it — before it notices the
 * client is gone (`client_connection_check_interval` is off by default), while verifyRun reads
 * the run in several statements: a batch committed between the history listing and the read of
 * `latest` looks half-applied ("latest is #19 but the newest history entry is #18", seen once in
 * CI). A half-applied batch is stored state and fails every attempt; a commit in flight passes
 * once it has landed, a few milliseconds later.
 */
export async function verifyRunSettled(
  storage: StorageAdapter,
  runId: string,
  acked: ReadonlyMap<number, string>,
  attempts = 3,
): Promise<RunCheck> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await verifyRun(storage, runId, acked);
    } catch (err) {
      if (attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}
