/**
 * One hold of the packed store's lock around the groups of one process: taken before a group
 * is formed, kept for lingerMs after the last group (a thread's next superstep usually comes
 * sooner) and at most maxHoldMs, then let go. Each new hold first brings the index up to date
 * with what other processes appended (tail.ts), cutting a crashed holder's torn tail, and pays
 * a seal owed by a broken lock (lock.ts) before anything is written: groups are planned only
 * against an index that holds every acknowledged write.
 */
import { holdsLease, letGoLock, LOCK_NAME, renewIfOld, sealOwed, settleSeal, stopLinger, takeLock, type PackedLock } from './lock.js';
import { join } from 'node:path';
import { leftBehind } from '../fs/lock.js';
import { isClaimOf } from '../fs/take-over.js';
import { rotate } from './maintain.js';
import { writeHint } from './hint.js';
import { removeLeftovers } from './open.js';
import type { PackedState } from './state.js';
import { tail } from './tail.js';

/** Whether a group may be formed now without taking (or renewing) the lock first. */
export function readyToWrite(l: PackedLock, at = Date.now()): boolean {
  return l.held !== undefined && holdsLease(l, at) && at - l.held.since <= l.maxHoldMs && at < l.leaseFrom! + l.leaseMs / 4;
}

/**
 * Makes this process the lock's holder with a lease that surely runs, and the index current:
 * a hold past maxHoldMs (or whose lease is no longer trusted) is let go and taken again.
 */
export async function ensureHold(state: PackedState): Promise<void> {
  const l = state.lock;
  stopLinger(l);
  if (l.held && holdsLease(l) && Date.now() - l.held.since <= l.maxHoldMs) {
    await renewIfOld(l);
    if (readyToWrite(l)) return;
  }
  if (l.held) await letGoLock(l);
  await takeLock(l);
  try {
    await settleHold(state);
  } catch (err) {
    await letGoLock(l).catch(() => undefined);
    throw err;
  }
}

/**
 * What a new holder does before anything is written: the index brought up to date (a crashed
 * holder's torn tail cut), the leftovers of a crashed rotation or compaction removed (once a
 * process), and a seal owed paid: a broken lock's holder may still land a write at the active
 * segment's end, so that segment is sealed at its intact end and a new one made active (a
 * rotation): the late write lands past the sealed length, where nobody reads.
 */
export async function settleHold(state: PackedState): Promise<void> {
  const l = state.lock;
  await tail(state, true);
  if (!state.leftoversChecked) {
    const names = await state.io.readdir(state.dir);
    await removeLeftovers(state, names);
    await removeDeadTokens(state, names);
    state.leftoversChecked = true;
  }
  if (await sealOwed(l)) {
    await rotate(state);
    await writeHint(state);
    settleSeal(l);
  }
}

/**
 * Removes the lock tokens (and broken locks being removed) of processes that are gone: a writer
 * killed while it held or kept one; and claims of the lock older than a lease (a claimer killed
 * between its take-over and removing its claim: they name an inode the lock, ours now, no longer holds).
 */
async function removeDeadTokens(state: PackedState, names: readonly string[]): Promise<void> {
  const l = state.lock;
  for (const name of names) {
    const path = join(state.dir, name);
    if (leftBehind(name, l.timing)) await state.io.unlink(path).catch(() => undefined);
    else if (isClaimOf(LOCK_NAME, name) && (await claimOlderThan(state, path, l.leaseMs)))
      await state.io.unlink(path).catch(() => undefined);
  }
}

async function claimOlderThan(state: PackedState, path: string, ms: number): Promise<boolean> {
  const st = await state.io.stat(path).catch(() => undefined);
  return st !== undefined && Date.now() - Number(st.mtimeMs) > ms;
}

/**
 * Once idle: the lock is let go lingerMs after the last group unless another comes first. One
 * timer for many groups (a group costs no timer call): when it fires early it waits out the rest.
 */
export function lingerThenLetGo(state: PackedState, isIdle: () => boolean): void {
  const l = state.lock;
  if (!l.held) return;
  l.idleSince = Date.now();
  if (!l.linger) armLinger(l, isIdle, l.lingerMs);
}

function armLinger(l: PackedLock, isIdle: () => boolean, ms: number): void {
  l.linger = setTimeout(() => {
    l.linger = undefined;
    // A group under way re-arms the timer when it ends.
    if (!l.held || !isIdle()) return;
    const left = l.idleSince + l.lingerMs - Date.now();
    if (left > 0) return armLinger(l, isIdle, left);
    void letGoLock(l).catch(() => undefined);
  }, ms);
  l.linger.unref?.();
}
