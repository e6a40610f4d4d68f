import { CheckpointError } from '../../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../../contract/storage.js';
import { drain, forget, scheduleApply } from './apply-queue.js';
import { newDirCache } from './dirs.js';
import { journalFd, O_DSYNC } from './files.js';
import { locked, type Held } from './hold.js';
import { placeNow, placeRecord, rotate } from './place.js';
import { planGroup } from './plan.js';
import type { KeyState, Pending, Planned } from './planned.js';
import { assertLease, leaseHeld, leaseLost, renewLease } from './lease.js';
import { encodeRecord, HEADER, type JournalOp } from './record.js';
import { recoverLocked } from './recover.js';
import type { JournalState } from './state.js';
import { giveBack } from './temps.js';

/*
 * The commit path: a batch's writes become one record written to the journal and
 * fdatasynced once — the commit point, after which the batch is acknowledged — and are then
 * applied to the spec's files in the background. Within a process, batches that arrive while
 * a commit is under way are committed together in the next record (group commit): one
 * write, one fdatasync.
 */

/** Queues a batch for the next group commit; resolves at its commit point. */
export function commitBatch(s: JournalState, ops: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  return new Promise<BatchOutcome[]>((resolve, reject) => {
    s.queue.push({ ops, resolve, reject });
    s.running ??= pump(s);
  });
}

/** Commits the queued batches, a group at a time, until none is left. */
async function pump(s: JournalState): Promise<void> {
  while (s.queue.length > 0) {
    const group = s.queue.splice(0, s.queue.length);
    try {
      await commitGroup(s, group);
    } catch (err) {
      for (const item of group) item.reject(err); // a no-op for those already settled
    }
  }
  s.running = undefined;
}

/**
 * Commits one group of batches under the lock: conditions checked (against what is known
 * of the keys: no call for a busy run's), versions planned, then the commit point — one
 * record written and fdatasynced — and the callers are answered. The files are applied
 * afterwards, in the background.
 */
async function commitGroup(s: JournalState, group: Pending[]): Promise<void> {
  const exact =
    s.exactNow ??
    (await (s.exactTimes ??= s.pool.exactTimes().then(
      (known) => (s.exactNow = known),
      () => (s.exactNow = false),
    )));
  await locked(s, async (lock, h) => {
    if (lock.brokeStale || s.needRecovery) await recoverLocked(s);
    const states = (h.states ??= new Map<string, KeyState>());
    const cache = (h.dirs ??= newDirCache(!h.unlisted));
    // Where the record goes is found while the batches are checked (its reads are independent); known already for the rest of a hold.
    const placing = placeNow(h)
      ? undefined
      : placeRecord(s, h).then(
          () => undefined,
          () => undefined,
        );
    const accepted = placing
      ? await planGroup(s, group, states, cache, exact).finally(() => placing)
      : await planGroup(s, group, states, cache, exact);
    if (placing) await placing;
    if (accepted.length === 0) return;
    const all = accepted.flatMap((a) => a.planned);
    try {
      await writeRecord(s, all, h, exact);
    } catch (err) {
      giveBack(s, all);
      forget(s, h);
      for (const a of accepted) a.item.reject(err);
      return;
    }
    // Committed. Until the files are applied, this process's reads answer from `pending`.
    for (const p of all) if (p.after) s.pending.set(p.op.key, p);
    const answers = accepted.map((a) => () => a.item.resolve(a.planned.map((p) => p.outcome)));
    if (!exact) {
      // Versions come from the applied files: answer once they are there.
      scheduleApply(s, all);
      await drain(s);
      if (s.needRecovery) await recoverLocked(s);
      forget(s, h);
      answerSpread(answers);
    } else {
      // Answered first: the apply starts on a later turn of the event loop (runApplies), after the caller has resumed.
      answerSpread(answers);
      scheduleApply(s, all);
    }
    if ((h.end ?? 0) > s.checkpointBytes) await rotate(s, h);
  });
}

/**
 * Answers a group's callers one per turn of the event loop: each answer resumes a run,
 * which does its next step's work at once (encoding, hashing its next checkpoint). Eight
 * runs answered together would hold the loop for all eight steps in one go; one per turn
 * lets timers and I/O in between (the event-loop delay bench).
 */
function answerSpread(answers: readonly (() => void)[]): void {
  let i = 0;
  const next = (): void => {
    answers[i++]!();
    if (i < answers.length) setImmediate(next);
  };
  if (answers.length > 0) next();
}

/** The record's operations and the puts' bytes, in order (a check writes nothing). */
function recordOps(all: readonly Planned[], exact: boolean): { ops: JournalOp[]; payloads: Uint8Array[] } {
  const ops: JournalOp[] = [];
  const payloads: Uint8Array[] = [];
  for (const { op, outcome, moves } of all) {
    if (op.type === 'put' && moves !== undefined) ops.push(['m', moves, op.key, (outcome as { version: string }).version]);
    else if (op.type === 'put') {
      // The version goes with the bytes: another process reading the journal answers it.
      ops.push(exact ? ['p', op.key, op.bytes.length, (outcome as { version: string }).version] : ['p', op.key, op.bytes.length]);
      payloads.push(op.bytes);
    } else if (op.type === 'delete') ops.push(['d', op.key]);
  }
  return { ops, payloads };
}

/**
 * The commit point: the record of the planned operations written in place at the
 * journal's end and fdatasynced. Nothing to write (only checks): resolves at once. On
 * failure the record is voided (so no replay applies it) and the error thrown: nothing was
 * committed.
 */
async function writeRecord(s: JournalState, all: readonly Planned[], h: Held, exact: boolean): Promise<void> {
  const { io } = s;
  const { ops, payloads } = recordOps(all, exact);
  if (ops.length === 0) return;
  const at = placeNow(h) ?? (await placeRecord(s, h));
  let record = encodeRecord(ops, payloads, at.epoch);
  if (at.end > 0 && at.end + record.length > s.preallocBytes) {
    // Past the preallocated file: switch files rather than grow it.
    await rotate(s, h);
    record = encodeRecord(ops, payloads, (await placeRecord(s, h)).epoch);
  }
  const file = h.active ?? 0;
  const jfd = s.opened[file] ?? (await journalFd(s, file));
  const end = h.end ?? 0;
  if (!leaseHeld(s)) await renewLease(s).catch(() => undefined);
  assertLease(s, 'the commit');
  try {
    // The commit point: one write in place, durable when it returns (O_DSYNC; else an fdatasync follows).
    await io.writeAt(jfd, record, end);
    // Temp files for the next commits are made once this write is durable, on a later turn
    // of the event loop: file creations running in the kernel beside the O_DSYNC write slowed
    // it (measured interleaved: see docs/performance.md).
    setImmediate(() => s.pool.refill());
    if (O_DSYNC === undefined) await io.datasync(jfd);
    if (!leaseHeld(s)) {
      // Durable, but perhaps after a breaker read the journal: not acknowledged; whoever holds the lock next replays what is there.
      h.end = undefined;
      s.needRecovery = true;
      throw leaseLost('the commit was durable');
    }
    s.lastCommitAt = performance.now();
    h.end = end + record.length;
    for (const op of ops) h.keys?.set(op[0] === 'm' ? op[2] : op[1], op[0] === 'd' ? 'gone' : 'file');
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    // Not committed: void a whole-but-unsynced or torn record, so no replay applies it.
    h.end = undefined;
    await io
      .writeAt(jfd, new Uint8Array(HEADER), end)
      .then(() => io.datasync(jfd))
      .catch(() => (s.needRecovery = true));
    throw err;
  }
}
