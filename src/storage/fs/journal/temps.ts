import { releaseOpenTemp } from '../descriptor-budget.js';
import type { Planned } from './planned.js';
import type { JournalState } from './state.js';

/*
 * Whose a put's temp file is: the pool's, the put's own, or — taken over — a later put's of
 * the same key, and back again when that later put is not committed.
 */

/**
 * Takes over the temp file of the acknowledged put of `key` not yet taken by an apply and
 * returns that put (undefined when there is none): that put would never reach the disk —
 * the apply merges it away — so its temp file serves the new one instead of a new inode
 * from the pool. A run's latest.json and index are replaced by every checkpoint: under 8
 * busy runs two of a checkpoint's three temp files came from the pool only to go back to it
 * when applied, and the pool ran empty (a temp file made on the commit's path) for ~40 % of
 * the puts. Only while versions are known at the commit point (`exact`), and only a young
 * temp file (an old one may be swept as a crashed writer's).
 */
export function takeOver(s: JournalState, key: string, exact: boolean): Planned | undefined {
  const prev = s.pending.get(key);
  if (
    !exact ||
    prev?.op.type !== 'put' ||
    prev.moves !== undefined ||
    !prev.temp ||
    prev.landed ||
    prev.claimed ||
    !s.pool.young(prev.temp)
  )
    return undefined;
  prev.taken = true;
  prev.landed = true;
  return prev;
}
/**
 * A put that took over an earlier put's temp file and is not committed (refused, or its
 * record failed): the temp file goes back to that put — unless an apply has taken it
 * meanwhile and so skipped it, when its file must come from the journal (a replay) and
 * the temp file is removed.
 */
function giveBackInherited(s: JournalState, p: Planned): void {
  const prev = p.from!;
  if (!prev.claimed) {
    prev.taken = false;
    prev.landed = false;
    return;
  }
  s.needRecovery = true;
  const { fd, path } = p.temp!;
  releaseOpenTemp(p.temp);
  void Promise.all([fd === undefined ? undefined : s.io.close(fd).catch(() => undefined), s.io.unlink(path).catch(() => undefined)]);
}

/**
 * Returns planned temp files that were never written to the pool. `committed`: the puts
 * are in the journal and an apply merged them away (a later operation of the key won):
 * each one's temp file is its own then, even one it took over from an earlier put, and
 * goes back to the pool as any other. Not committed, a taken-over temp file goes back to
 * the put it came from (giveBackInherited).
 */
export function giveBack(s: JournalState, planned: readonly Planned[], committed = false): void {
  for (const p of planned) {
    if (p.temp && !p.landed) {
      p.landed = true;
      // A move's source file is a key's file, not a temp file: it stays.
      if (p.moves !== undefined) continue;
      if (p.from && !committed) giveBackInherited(s, p);
      else {
        releaseOpenTemp(p.temp);
        s.pool.giveBack(p.temp);
      }
    }
  }
}
