import type { BatchOperation, BatchOutcome } from '../../../contract/storage.js';
import { errnoOf } from '../io.js';
import { closeJournal, flushJournal } from './close.js';
import { commitBatch } from './commit.js';
import { locked } from './hold.js';
import type { AckedState } from './planned.js';
import { recoverLocked, type RecoveryReport } from './recover.js';
import { createJournalState, type JournalDeps } from './state.js';
import { unapplied, unappliedKeyNow, unappliedNow } from './view.js';

/*
 * The write-ahead journal: a batch's writes become one record written to
 * `<root>/.sp\journal` and fdatasynced once — the commit point, after which the batch is
 * acknowledged — and are then applied to the spec's files in the background, by rename of
 * whole files (so a reader that is not savepoint sees an old or a new file, never a torn
 * one). The applied files are not fsynced one by one: the journal is the truth until a
 * checkpoint has fsynced them and emptied it. Opening the store (and taking the journal
 * lock from a holder that died) replays it: every key the journal names is brought to its
 * last journaled state — files that already hold it are not touched, so their versions
 * stay — then checkpointed.
 *
 * Acknowledged before applied: until its files are renamed into place, this process's
 * reads answer from the acknowledged records it holds in memory (`pending`); a holder lets
 * the journal lock go only once everything it committed is applied, so records not yet
 * applied exist only while their writer holds the lock — and another instance's reads, while
 * the lock is held by someone else, read the journal's records (`view`) before the files.
 * A put's version (`<mtime ns>.<inode>.<size>`) is known at the commit point: its inode is
 * that of a temp file made ahead (temp-pool.ts), its mtime one chosen now and set with
 * futimes when the file is applied, and the record carries it for other processes.
 *
 * One journal per store directory, shared by every process: a lock file (the same
 * link-a-temp-file lock as keys' locks, see lock.ts) serializes commits, so conditions
 * (`ifAbsent`, `ifVersion`, checks) are evaluated under it against what keys hold — the
 * records acknowledged and not yet applied first, then the files — and hold between
 * processes. Within a process, batches that arrive while a commit is under way are
 * committed together in the next record (group commit): one write, one fdatasync; and
 * applies that fall behind are merged, so a key replaced by several records meanwhile is
 * renamed once, to its last state.
 *
 * The parts, each a function over one state object (state.ts): record.ts (the record
 * format), files.ts (the two journal files), hold.ts (the journal lock), plan.ts (a group's
 * conditions and versions), commit.ts (the commit point), apply-queue.ts and apply.ts (the
 * files brought up to date), place.ts (where records go, switching files), checkpoint.ts,
 * recover.ts (replay), view.ts (reads of records not yet applied), close.ts.
 */

export interface Journal {
  /** Commits `ops` atomically (all or none), sharing the record with concurrent batches of this process; resolves at the commit point. */
  commit(ops: readonly BatchOperation[]): Promise<BatchOutcome[]>;
  /**
   * The keys (starting with `prefix`) whose acknowledged state may not be in their files
   * yet — this process's records not yet applied, or, while another instance holds the
   * journal lock, the journal's records — each with its last journaled state. Every other
   * key's file is up to date.
   */
  unapplied(prefix: string): Promise<ReadonlyMap<string, AckedState>>;
  /** {@link unapplied} without a promise when it needs no read of the journal files, else undefined. */
  unappliedNow(prefix: string): ReadonlyMap<string, AckedState> | undefined;
  /** {@link unappliedNow} narrowed to one key, without a walk of every record not yet applied. */
  unappliedKeyNow(key: string): ReadonlyMap<string, AckedState> | undefined;
  /** Waits until everything acknowledged so far is applied to the files (replaying what failed). */
  flush(): Promise<void>;
  /** Replays and checkpoints the journal under its lock (on open). */
  recover(): Promise<RecoveryReport>;
  /** Waits for pending commits, checkpoints, closes the journal file. */
  close(): Promise<void>;
}

export function createJournal(deps: JournalDeps): Journal {
  const s = createJournalState(deps);
  return {
    commit: (ops) => commitBatch(s, ops),
    unapplied: (prefix) => unapplied(s, prefix),
    unappliedNow: (prefix) => unappliedNow(s, prefix),
    unappliedKeyNow: (key) => unappliedKeyNow(s, key),
    flush: () => flushJournal(s),
    recover: () =>
      locked(s, () => recoverLocked(s), false).catch((err: unknown) => {
        // Not replayed for want of space: reads answer the journal's records until a write replays it (see read-only.ts).
        if (errnoOf(err) === 'ENOSPC' || errnoOf(err) === 'EDQUOT') s.needRecovery = true;
        throw err;
      }),
    close: () => closeJournal(s),
  };
}

export { JOURNAL_NAME, JOURNAL_NAMES, replayOrder } from './files.js';
export { keptDescriptors } from './kept.js';
export type { AckedState } from './planned.js';
export { decodeJournal, encodeRecord, nextEpoch, type DecodedJournal, type DecodedRecord, type JournalOp } from './record.js';
export type { RecoveryReport } from './recover.js';
export type { JournalDeps } from './state.js';
