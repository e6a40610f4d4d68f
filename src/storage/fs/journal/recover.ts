import { constants, type BigIntStats } from 'node:fs';
import { CheckpointError } from '../../../contract/errors.js';
import { openDir, type OpenedDir } from '../dir.js';
import { nextMtimeSeconds, versionOf } from '../io.js';
import { newOwner, tempName } from '../names.js';
import { keyPath } from '../paths.js';
import { drain, forget } from './apply-queue.js';
import { checkpointLocked, settleRetiring } from './checkpoint.js';
import { epochsOf, readDecoded, replayOrder, swapJournalFiles } from './files.js';
import { assertLease } from './lease.js';
import { dropKept } from './kept.js';
import { settleReplay } from './replay-owed.js';
import { stateOf } from './key-state.js';
import { redoMove, type JournaledMove } from './move.js';
import type { KeyState } from './planned.js';
import type { JournalState } from './state.js';

/*
 * Replay: opening the store (and taking the journal lock from a holder that died) brings
 * every key the journal names to its last journaled state — files that already hold it are
 * not touched, so their versions stay — then checkpoints.
 */

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_RDONLY, O_NONBLOCK } = constants;

/** What recovery found. */
export interface RecoveryReport {
  /** Whole records found in the journal. */
  readonly records: number;
  /** Keys whose files did not hold their last journaled state and were rewritten or removed. */
  readonly repaired: number;
  /** Keys left as they were because their path is no longer the store's to write (a symlink or a directory in the way). */
  readonly refused: number;
  /** Bytes of a torn last record, discarded. */
  readonly discardedBytes: number;
}

/**
 * Brings every key the journal names to its last journaled state — both files' records,
 * the older file's first — then checkpoints. Under the lock.
 */
export async function recoverLocked(s: JournalState): Promise<RecoveryReport> {
  await drain(s);
  await settleRetiring(s.held);
  // A replay may rewrite any key's file (a new inode): its checkpoint fsyncs the files by path.
  dropKept(s);
  s.keptVerified = true;
  const found = await Promise.all([readDecoded(s, 0), readDecoded(s, 1)]);
  const order = replayOrder(epochsOf(found));
  const records = order.flatMap((file) => found[file].records);
  const torn = found[0].torn + found[1].torn;
  const last = new Map<string, Uint8Array | null | JournaledMove>();
  for (const r of records)
    for (const op of r.ops) last.set(op.key, op.type === 'move' ? movedWant(last.get(op.from), op) : op.type === 'put' ? op.bytes : null);
  let repaired = 0;
  let refused = 0;
  // Moves first: a later state of a move's source (a put there again, its delete) would replace or remove the moved file.
  const replaying = [...last].sort(([, a], [, b]) => Number(isMove(b)) - Number(isMove(a)));
  for (const [key, want] of replaying) {
    assertLease(s, 'the replay of the journal');
    try {
      if (isMove(want) ? await redoMove(s, want) : await repair(s, key, want)) repaired++;
    } catch (err) {
      // A key whose path now goes through a symlink or is taken by a directory is not the
      // store's to write: it is left alone rather than blocking every other key's recovery.
      if (!(err instanceof CheckpointError && err.reasonCode === 'checkpoint_key_invalid')) throw err;
      refused++;
    }
  }
  // The files hold the journal's last states now (a rewritten file has a version of its own).
  s.pending.clear();
  if (s.held) forget(s, s.held);
  await checkpointLocked(s, [...last.keys()]);
  if (s.swapAfterRecovery) {
    // The holder whose lease we broke may still write to the files it has open: new ones take their place.
    await swapJournalFiles(s);
    s.swapAfterRecovery = false;
  }
  // The debt another process wrote down is paid (only under a lease that surely runs: a later break writes it again).
  if (s.owedReplay) {
    assertLease(s, 'the replay of the journal');
    await settleReplay(s);
    s.owedReplay = false;
  }
  s.needRecovery = false;
  return { records: records.length, repaired, refused, discardedBytes: torn };
}

/**
 * What a move's target must hold, from what its source held before it in the records: the bytes
 * of a put there (its file may not be durable yet: the record is), or the moved file itself when
 * no earlier record names the source (its file was durable before these records) — through the
 * keys it was moved along when it was itself moved there.
 */
function movedWant(before: Uint8Array | null | JournaledMove | undefined, op: JournaledMove): Uint8Array | JournaledMove {
  if (before instanceof Uint8Array) return before;
  if (before) return { ...op, from: [before.from, op.from].flat() };
  return op;
}

const isMove = (want: Uint8Array | null | JournaledMove): want is JournaledMove => want !== null && !(want instanceof Uint8Array);

/** Makes `key` hold `want` (absent for null) unless it already does; true when it changed something. */
async function repair(s: JournalState, key: string, want: Uint8Array | null): Promise<boolean> {
  const { io } = s;
  const kp = keyPath(key);
  let od: OpenedDir | undefined;
  try {
    od = await openDir(s.root, kp.dirKey, key, want !== null, io);
    const state = await stateOf(od, key);
    if (want === null) {
      if (!state.exists || !od) return false;
      await io.unlink(od.dir.at(kp.base));
      return true;
    }
    if (state.exists && (await sameBytes(s, od!.dir.at(kp.base), want))) return false;
    const temp = await settleMtime(s, await writeTemp(s, od!, want), state);
    try {
      await io.rename(temp.path, od!.dir.at(kp.base));
    } finally {
      await io.close(temp.fd).catch(() => undefined);
    }
    return true;
  } finally {
    await od?.close();
  }
}

async function sameBytes(s: JournalState, path: string, want: Uint8Array): Promise<boolean> {
  const { io } = s;
  const rfd = await io.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const st = await io.fstat(rfd);
    if (Number(st.size) !== want.length) return false;
    return Buffer.from(await io.read(rfd, want.length)).equals(want);
  } finally {
    await io.close(rfd).catch(() => undefined);
  }
}

/** A temp file written with a key's bytes, and the version it will give the key. */
interface Temp {
  readonly path: string;
  readonly fd: number;
  readonly version: string;
  readonly mtimeNs: bigint;
}

/** Writes a put's bytes to a temp file in its directory. */
async function writeTemp(s: JournalState, od: OpenedDir, bytes: Uint8Array): Promise<Temp> {
  const { io } = s;
  const path = od.dir.at(tempName(newOwner(s.timing.clock.now())));
  const tfd = await io.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, s.fileMode);
  try {
    await io.write(tfd, bytes);
    const st = await io.fstat(tfd);
    return { path, fd: tfd, version: versionOf(st), mtimeNs: st.mtimeNs };
  } catch (err) {
    await dropTemp(s, { path, fd: tfd });
    throw err;
  }
}

async function dropTemp(s: JournalState, temp: { readonly path: string; readonly fd: number }): Promise<void> {
  await Promise.all([s.io.close(temp.fd).catch(() => undefined), s.io.unlink(temp.path).catch(() => undefined)]);
}

/**
 * Moves the temp file's mtime past the previous file's when the clock did not (coarse
 * timestamps), so the key's version changes. The version is then final: rename keeps
 * inode, mtime and size.
 */
async function settleMtime(s: JournalState, temp: Temp, previous: KeyState): Promise<Temp> {
  if (previous.mtimeNs === undefined || temp.mtimeNs > previous.mtimeNs) return temp;
  try {
    await s.io.futimes(temp.fd, nextMtimeSeconds({ mtimeNs: previous.mtimeNs } as BigIntStats));
    const st = await s.io.fstat(temp.fd);
    return { ...temp, version: versionOf(st), mtimeNs: st.mtimeNs };
  } catch (err) {
    await dropTemp(s, temp);
    throw err;
  }
}
