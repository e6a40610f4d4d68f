import { drain } from './apply-queue.js';
import { checkpointLocked, settleRetiring } from './checkpoint.js';
import { readDecoded } from './files.js';
import { letGo, locked } from './hold.js';
import { dropSpareToken } from '../lock.js';
import { dropKept } from './kept.js';
import { recoverLocked } from './recover.js';
import type { JournalState } from './state.js';

/** Waits until everything acknowledged so far is applied to the files (replaying what failed). */
export async function flushJournal(s: JournalState): Promise<void> {
  while (s.running) await s.running;
  await drain(s);
  // A background checkpoint under way ends too (its failure is replayed now).
  await settleRetiring(s.held);
  await s.releasing?.catch(() => undefined);
  if (s.needRecovery) await locked(s, () => recoverLocked(s));
}

/**
 * Waits for pending commits, checkpoints, closes the journal files, lets the lock go and
 * empties the temp pool. The files are released even when the checkpoint fails (a full or
 * read-only disk): the failure is thrown after (regression: a failed final checkpoint left
 * the lock's token and the pooled temp files open, and the disk could not be unmounted).
 */
export async function closeJournal(s: JournalState): Promise<void> {
  while (s.running) await s.running;
  await drain(s);
  try {
    if (s.fds[0] !== undefined || s.fds[1] !== undefined) await finalCheckpoint(s);
  } finally {
    await Promise.all(
      s.fds.map(async (opening, file) => {
        s.fds[file] = undefined;
        s.opened[file] = undefined;
        await opening?.then((jfd) => s.io.close(jfd)).catch(() => undefined);
      }),
    );
    if (s.linger) clearTimeout(s.linger);
    await letGo(s).catch(() => undefined);
    await dropSpareToken(s);
    await s.dropping;
    await s.pool.close();
  }
}

/**
 * The journal replayed or checkpointed, so that it is empty once closed, and its files given
 * back to the disk: a closed store keeps no preallocated zeros (two files of about
 * `journalCheckpointBytes` each), which would otherwise be most of a small store's size.
 */
async function finalCheckpoint(s: JournalState): Promise<void> {
  await locked(
    s,
    async (_lock, h) => {
      await settleRetiring(h);
      if (!s.keptVerified) dropKept(s);
      if (s.needRecovery) await recoverLocked(s);
      else if ((await Promise.all([readDecoded(s, 0), readDecoded(s, 1)])).some((f) => f.records.length > 0)) await checkpointLocked(s);
      await emptyFiles(s);
    },
    false,
  );
}

/**
 * Cuts the journal files this process has open to nothing, under the lock. Called once they
 * hold no record: a replay and a checkpoint both end by emptying both files, and a journal
 * found without records was empty already. Safe for other processes: a holder reads where the
 * next record goes each time it takes the lock (an emptied file says 0, as a checkpointed one
 * does), and a record written to a file that grows is made durable with its new size by O_DSYNC
 * or fdatasync alike; the next open preallocates the file again.
 */
async function emptyFiles(s: JournalState): Promise<void> {
  await Promise.all(
    ([0, 1] as const).map(async (file) => {
      const jfd = s.opened[file];
      if (jfd !== undefined) await s.io.ftruncate(jfd, 0);
    }),
  );
}
