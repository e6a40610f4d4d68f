import fs from 'node:fs';
import { lstatIfAny } from '../lock.js';
import { afterThisRun } from '../read-now.js';
import { dropReplacedFiles, journalFd, JOURNAL_LOCK, replayOrder, type FileNo } from './files.js';
import type { AckedState, Planned } from './planned.js';
import { decodeJournal, HEADER, isMagic } from './record.js';
import { movedState } from './move.js';
import { JOURNAL_REPLAY_OWED, replayOwed } from './replay-owed.js';
import type { JournalState } from './state.js';

/*
 * Reads answered from records not yet applied. Acknowledged before applied: until its files
 * are renamed into place, this process's reads answer from the acknowledged records it holds
 * in memory (`pending`); a holder lets the journal lock go only once everything it committed
 * is applied, so records not yet applied exist only while their writer holds the lock — and
 * another instance's reads, while the lock is held by someone else, read the journal's
 * records (the view) before the files.
 *
 * The view: what the journal says, for reads while another instance holds the lock (its
 * records may not be applied yet): each key's last journaled state. Read incrementally — the
 * records after the last one read, which is read again to notice a journal emptied or a
 * record voided since — so a read costs a header and a short positional read.
 */

const VIEW_CHUNK = 64 << 10;
/** What one journal file says, as read so far: its epoch, where its last record read starts and ends, each key's last state. */
export interface View {
  epoch: number;
  start: number;
  end: number;
  keys: Map<string, AckedState>;
}

/** The acknowledged state a pending operation leaves. */
const ackedOf = (p: Planned): AckedState =>
  p.op.type === 'put' ? { bytes: p.op.bytes, version: (p.outcome as { version: string }).version } : { bytes: null };

/**
 * The keys (starting with `prefix`) whose acknowledged state may not be in their files yet —
 * this process's records not yet applied, or, while another instance holds the journal
 * lock, the journal's records — each with its last journaled state.
 */
export async function unapplied(s: JournalState, prefix: string): Promise<ReadonlyMap<string, AckedState>> {
  const out = new Map<string, AckedState>();
  // Ours: while the lock is ours nobody else has records unapplied.
  if (s.pending.size > 0 || s.lockOurs) {
    for (const [key, p] of s.pending) if (key.startsWith(prefix)) out.set(key, ackedOf(p));
    return out;
  }
  // Nobody holds the lock: every record is applied — unless a replay of ours failed (a full disk), or
  // one is owed since a holder died (replay-owed.ts).
  if (!s.needRecovery && !(await lstatIfAny(s.root.at(JOURNAL_LOCK))) && !(await replayOwed(s))) return out;
  // A process that broke a lapsed lease replaced the journal files: the ones open here would show none of the new records.
  await dropReplacedFiles(s);
  for (const [key, state] of await journalView(s)) if (key.startsWith(prefix)) out.set(key, state);
  return out;
}

/**
 * {@link unapplied} when it needs no read of the journal files, answered without a promise (a
 * read of a small file then costs no trip through the thread pool): this process's records, or
 * none when nobody holds the journal lock. Undefined when another instance holds it (or a replay
 * of ours failed): the caller then asks {@link unapplied}.
 */
export function unappliedNow(s: JournalState, prefix: string): ReadonlyMap<string, AckedState> | undefined {
  if (s.pending.size > 0 || s.lockOurs) {
    const out = new Map<string, AckedState>();
    for (const [key, p] of s.pending) if (key.startsWith(prefix)) out.set(key, ackedOf(p));
    return out;
  }
  if (s.needRecovery) return undefined;
  if (!lockFreeThisRun.has(s)) {
    if (lstatNowIfAny(s.root.at(JOURNAL_LOCK)) || lstatNowIfAny(s.root.at(JOURNAL_REPLAY_OWED))) return undefined;
    lockFreeThisRun.add(s);
    afterThisRun(() => lockFreeThisRun.delete(s));
  }
  return NOTHING;
}

/**
 * {@link unappliedNow} for one key (a read): the same answer narrowed to `key`, found without
 * a walk of every record not yet applied — a reader right after a run of commits would
 * otherwise walk them all for each document it reads.
 */
export function unappliedKeyNow(s: JournalState, key: string): ReadonlyMap<string, AckedState> | undefined {
  if (s.pending.size === 0 && !s.lockOurs) return unappliedNow(s, key);
  const p = s.pending.get(key);
  return p ? new Map([[key, ackedOf(p)]]) : NOTHING;
}

/**
 * Journals whose lock was found free in the current run of synchronous code and its
 * microtasks, so reads made together look once (a checkpoint read, then its writes listed and
 * read: the same window as the directories of ../read-now.ts): this process takes the lock
 * only in a later turn of the event loop, and another process taking it meanwhile is
 * concurrent with the reads.
 */
const lockFreeThisRun = new WeakSet<JournalState>();

const NOTHING: ReadonlyMap<string, AckedState> = new Map();

/** Whether `path` exists now (lstat: a link is not followed; no error made for a missing one; looked up at call time, so tests can count it). */
const lstatNowIfAny = (path: string): boolean => fs.lstatSync(path, { throwIfNoEntry: false }) !== undefined;

/** Both files' views, merged in replay order (the newer file's state of a key wins). */
async function journalView(s: JournalState): Promise<ReadonlyMap<string, AckedState>> {
  const both = await Promise.all([fileView(s, 0), fileView(s, 1)]);
  const out = new Map<string, AckedState>();
  for (const file of replayOrder([both[0]?.keys.size ? both[0].epoch : undefined, both[1]?.keys.size ? both[1].epoch : undefined])) {
    for (const [key, state] of both[file]?.keys ?? []) out.set(key, state);
  }
  return out;
}
async function fileView(s: JournalState, file: FileNo): Promise<View | undefined> {
  const { io, views } = s;
  const jfd = await journalFd(s, file);
  const head = Buffer.from(await io.read(jfd, HEADER, 0));
  if (head.length < HEADER || !isMagic(head.readUInt32BE(0))) {
    views[file] = undefined;
    return undefined;
  }
  const epoch = head.readUInt32BE(8);
  if (views[file]?.epoch !== epoch) views[file] = { epoch, start: 0, end: 0, keys: new Map() };
  const v = views[file]!;
  let size = VIEW_CHUNK;
  for (;;) {
    const from = v.start;
    const found = decodeJournal(await io.read(jfd, Math.max(size, v.end - from + HEADER), from), epoch);
    const again = from < v.end ? 1 : 0;
    if (again && found.records.length === 0) {
      // The last record read is gone (voided): read the journal afresh.
      Object.assign(v, { start: 0, end: 0, keys: new Map() });
      continue;
    }
    for (const r of found.records.slice(again))
      for (const op of r.ops)
        v.keys.set(
          op.key,
          op.type === 'put'
            ? { bytes: op.bytes, ...(op.version === undefined ? {} : { version: op.version }) }
            : op.type === 'move'
              ? await movedState(s, op)
              : { bytes: null },
        );
    if (found.records.length > 0) v.start = from + found.lastStart;
    v.end = from + found.end;
    if (found.wants === undefined) return v;
    size = found.wants;
  }
}
