import type { BigIntStats } from 'node:fs';
import { conditionFailed } from '../../../contract/errors.js';
import type { BatchOperation } from '../../../contract/storage.js';
import type { Dir, OpenedDir } from '../dir.js';
import { holdsReservation, OPEN_TEMPS_PER_BATCH, reserveOpenTemp, unreserveOpenTemp, withDescriptor } from '../descriptor-budget.js';
import { nextMtimeSeconds } from '../io.js';
import { keyPath, occupiedRefused } from '../paths.js';
import { futimesNs, type PooledTemp } from '../temp-pool.js';
import {
  assertNoFileAt,
  dirOf,
  hasRoom,
  knownMissing,
  listParentSoon,
  nearestOpen,
  parentOf,
  toMake,
  walkRetrying,
  type DirCache,
} from './dirs.js';
import { knownState, stateMissing, stateNow } from './key-state.js';
import type { Checked, KeyState, Pending, Planned } from './planned.js';
import type { JournalState } from './state.js';
import { movedFromOf, sourceFile } from './move.js';
import { giveBack, takeOver } from './temps.js';

/*
 * Planning a group under the lock: each batch's conditions checked against what its keys
 * hold, then each operation planned — a put with its temp file and the mtime its file will
 * have, so its version is known before any byte is written.
 */

/** Checks one operation's condition against what the key holds (no file is written). */
async function checkOne(s: JournalState, op: BatchOperation, states: Map<string, KeyState>, cache: DirCache): Promise<Checked> {
  const kp = keyPath(op.key);
  const mode = op.type === 'put' ? 'probe' : false;
  // Past the directories a hold keeps open, a new one is walked for this check alone (descriptor-budget.ts).
  if (!cache.byKey.has(kp.dirKey) && !hasRoom(cache) && !knownMissing(s, cache, kp.dirKey, op.key, mode))
    return checkUncached(s, op, states, cache);
  const od = await dirOf(s, cache, kp.dirKey, op.key, mode);
  return checked(op, od, await knownState(s, states, od, op.key, cache), cache);
}

/**
 * {@link checkOne} past the cache's bound: the key's directory walked, the key's state read
 * and the directory closed, a few at a time. Planned without its directory, its apply walks
 * it again (and makes it when missing: the directories it would make are marked so that a
 * file put at their path is refused, as {@link toMake} does).
 */
function checkUncached(s: JournalState, op: BatchOperation, states: Map<string, KeyState>, cache: DirCache): Promise<Checked> {
  const kp = keyPath(op.key);
  return withDescriptor(async () => {
    const near = nearestOpen(cache, kp.dirKey);
    const od = await walkRetrying(s, kp.dirKey, op.key, op.type === 'put' ? 'probe' : false, near);
    try {
      if (!od && op.type === 'put') assertNoFileAt(s, kp.dirKey, op.key);
      const found = checked(op, undefined, await knownState(s, states, od, op.key, cache), cache, false, near);
      if (!od && op.type === 'put') for (let d: string | undefined = kp.dirKey; d !== undefined; d = parentOf(d)) cache.toMake.add(d);
      return found;
    } finally {
      await od?.close();
    }
  });
}

/**
 * An operation's condition held against `before` (what the key holds), or its refusal.
 * Planned with its directory open, through the cache that opens it at apply (`cached`:
 * it was missing), or with neither (past the cache's bound: its apply walks it).
 */
function checked(
  op: BatchOperation,
  od: OpenedDir | undefined,
  before: KeyState,
  cache: DirCache,
  cached = true,
  near?: readonly Dir[],
): Checked {
  // A directory this hold made, or will make for a put already planned, is in the way of a file.
  if (op.type === 'put' && (cache.toMake.has(op.key) || cache.made.has(op.key))) throw occupiedRefused(op.key);
  const cond = op as { ifAbsent?: boolean; ifVersion?: string };
  if (cond.ifAbsent && before.exists) throw conditionFailed(op.key, 'key exists');
  if (cond.ifVersion !== undefined && (!before.exists || before.version !== cond.ifVersion))
    throw conditionFailed(op.key, before.exists ? 'version changed' : 'key is gone');
  return { op, ...(od ? { od } : cached ? { dirs: cache } : near ? { near } : {}), before };
}

/**
 * Plans a checked operation: a put gets an empty temp file made ahead (its inode) and the
 * mtime its file will have, past the previous one's — so its version is known now, before
 * any byte is written.
 */
async function plan(s: JournalState, c: Checked, exact: boolean, open: boolean, source?: PooledTemp): Promise<Planned> {
  if (c.op.type !== 'put') return planWith(c, exact, undefined);
  if (source) return planWith(c, exact, source, undefined, movedFromOf(c.op));
  const from = takeOver(s, c.op.key, exact);
  return from ? planWith(c, exact, from.temp, from) : planWith(c, exact, await takeTemp(s, open));
}

/** A put's temp file: open (`open`: among its batch's first puts) while the process holds fewer than MAX_OPEN_TEMPS, else closed (descriptor-budget.ts). */
async function takeTemp(s: JournalState, open: boolean): Promise<PooledTemp> {
  if (!open || !reserveOpenTemp()) return s.pool.takeClosed();
  try {
    const temp = await s.pool.take();
    holdsReservation(temp);
    return temp;
  } catch (err) {
    unreserveOpenTemp();
    throw err;
  }
}

/** A pooled temp file at once: an open one within the process's open ones, else a closed one made ahead (undefined: none ready). */
function takeReady(s: JournalState): PooledTemp | undefined {
  if (!reserveOpenTemp()) return s.pool.takeReadyClosed();
  const temp = s.pool.takeReady();
  if (temp) holdsReservation(temp);
  else unreserveOpenTemp();
  return temp;
}

/** {@link plan} with the put's temp file in hand (`from`: the put it was taken over from; `moves`: a move's put, `temp` its source's file). */
function planWith(c: Checked, exact: boolean, temp: PooledTemp | undefined, from?: Planned, moves?: string): Planned {
  const { op, od, before, dirs, near } = c;
  const entry = od ? { od } : dirs ? { dirs } : near ? { near } : {};
  if (dirs && op.type === 'put') toMake(dirs, keyPath(op.key).dirKey);
  if (op.type === 'put') {
    if (!temp) throw new Error('a put is planned with its temp file');
    const mtimeSeconds = nextMtimeSeconds(before.mtimeNs === undefined ? undefined : ({ mtimeNs: before.mtimeNs } as BigIntStats));
    const mtimeNs = futimesNs(mtimeSeconds);
    const version = `${mtimeNs}.${temp.ino}.${op.bytes.length}`;
    const after: KeyState = { exists: true, version, mtimeNs };
    return {
      op,
      ...entry,
      temp,
      mtimeSeconds,
      before,
      after,
      outcome: { type: 'put', key: op.key, version },
      exact,
      ...(from ? { from } : {}),
      ...(moves !== undefined ? { moves } : {}),
    };
  }
  if (op.type === 'delete')
    return { op, ...entry, before, after: { exists: false }, outcome: { type: 'delete', key: op.key, existed: before.exists }, exact };
  return { op, ...entry, before, outcome: { type: 'check', key: op.key }, exact };
}

/** Checks a batch's conditions and plans it; rejects with the first refusal (nothing planned stays). */
async function planBatch(
  s: JournalState,
  ops: readonly BatchOperation[],
  states: Map<string, KeyState>,
  cache: DirCache,
  exact: boolean,
  named: ReadonlySet<string>,
): Promise<Planned[]> {
  const settled = await Promise.allSettled(ops.map((op) => checkOne(s, op, states, cache)));
  const refused = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (refused) throw refused.reason;
  const checked = settled.map((r) => (r as PromiseFulfilledResult<Checked>).value);
  let puts = 0;
  const planned = await Promise.allSettled(
    checked.map((c) => {
      const source = sourceFile(s, c, checked, exact, named);
      return plan(s, c, exact, !source && c.op.type === 'put' && puts++ < OPEN_TEMPS_PER_BATCH, source);
    }),
  );
  const done = planned.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = planned.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    giveBack(s, done);
    throw failed.reason;
  }
  linkMoves(done);
  // Later batches of the group (and of this hold) check against what this one leaves.
  for (const p of done) if (p.after) states.set(p.op.key, p.after);
  return done;
}

/**
 * Plans a batch at once, without a call or an await, when everything it needs is in hand
 * (a busy run's commit path): each key's directory walked and its state known under this
 * hold, a young temp file in the pool for each put. Undefined when something must be
 * fetched first (planBatch plans it then); throws the first refusal as planBatch does.
 */
function planNow(
  s: JournalState,
  ops: readonly BatchOperation[],
  states: Map<string, KeyState>,
  cache: DirCache,
  exact: boolean,
  named: ReadonlySet<string>,
): Planned[] | undefined {
  // A large batch takes closed temp files past its first puts: planBatch plans it.
  if (ops.length > OPEN_TEMPS_PER_BATCH) return undefined;
  const found: Checked[] = [];
  for (const op of ops) {
    const kp = keyPath(op.key);
    const od = cache.ready.get(kp.dirKey);
    // A directory known missing holds only what this hold wrote into it (acknowledged, not yet applied).
    const before = od
      ? stateNow(s, states, od, op.key, kp.base, cache)
      : knownMissing(s, cache, kp.dirKey, op.key, op.type === 'put' ? 'probe' : false)
        ? stateMissing(s, states, op.key)
        : undefined;
    if (!before) {
      if (!od) listParentSoon(cache, kp.dirKey);
      return undefined;
    }
    // Every condition before any temp file is taken: a refusal leaves the pool as it was.
    found.push(checked(op, od, before, cache));
  }
  const done: Planned[] = [];
  for (const c of found) {
    const source = sourceFile(s, c, found, exact, named);
    if (source) {
      done.push(planWith(c, exact, source, undefined, movedFromOf(c.op)));
      continue;
    }
    const from = c.op.type === 'put' ? takeOver(s, c.op.key, exact) : undefined;
    const temp = from ? from.temp : c.op.type === 'put' ? takeReady(s) : undefined;
    if (c.op.type === 'put' && !temp) {
      giveBack(s, done);
      return undefined;
    }
    done.push(planWith(c, exact, temp, from));
  }
  linkMoves(done);
  for (const p of done) if (p.after) states.set(p.op.key, p.after);
  return done;
}

/** Links each move's delete of its source to the put that renames the source's file away (see Planned.movedBy). */
function linkMoves(batch: readonly Planned[]): void {
  for (const p of batch) {
    if (p.moves === undefined) continue;
    const source = batch.find((d) => d.op.type === 'delete' && d.op.key === p.moves);
    if (source) source.movedBy = p;
  }
}

/** The batches of a group split in waves: a batch on a key an earlier batch of its wave names starts the next wave. */
function wavesOf(group: readonly Pending[]): Pending[][] {
  const waves: Pending[][] = [];
  let wave: Pending[] = [];
  let named = new Set<string>();
  for (const item of group) {
    if (item.ops.some((op) => named.has(op.key))) {
      waves.push(wave);
      wave = [];
      named = new Set();
    }
    wave.push(item);
    for (const op of item.ops) named.add(op.key);
  }
  waves.push(wave);
  return waves;
}

/**
 * Plans a group's batches in order of arrival: batches on keys no earlier batch of the
 * group names (concurrent runs: the common case) at once, a batch on a key an earlier one
 * names after it (its conditions see what that one leaves). Rejects the refused ones.
 */
export async function planGroup(
  s: JournalState,
  group: readonly Pending[],
  states: Map<string, KeyState>,
  cache: DirCache,
  exact: boolean,
): Promise<{ item: Pending; planned: Planned[] }[]> {
  const accepted: { item: Pending; planned: Planned[] }[] = [];
  // Keys an earlier wave of the group names: not yet in `pending`, their state not a file's (a move from one is a copy).
  const named = new Set<string>();
  for (const items of wavesOf(group)) {
    // Planned at once where nothing must be fetched (the keys of a busy run), else through the calls it needs.
    const now = items.map((item): Planned[] | undefined | null => {
      try {
        return planNow(s, item.ops, states, cache, exact, named);
      } catch (err) {
        item.reject(err);
        return null;
      }
    });
    const later = items.filter((_, i) => now[i] === undefined);
    const settled =
      later.length === 0 ? [] : await Promise.allSettled(later.map((item) => planBatch(s, item.ops, states, cache, exact, named)));
    items.forEach((item, i) => {
      const planned = now[i];
      if (planned) accepted.push({ item, planned });
      else if (planned === undefined) {
        const r = settled[later.indexOf(item)]!;
        if (r.status === 'fulfilled') accepted.push({ item, planned: r.value });
        else item.reject(r.reason);
      }
    });
    for (const item of items) for (const op of item.ops) named.add(op.key);
  }
  return accepted;
}
