import { applyMerged, discard } from './apply.js';
import { closeDirs } from './dirs.js';
import type { Held } from './hold.js';
import type { ApplyItem, Planned } from './planned.js';
import type { JournalState } from './state.js';

/*
 * The apply queue: committed groups wait in it, in commit order, for a lull in the commits
 * (see applyQuietMs in state.ts), then are applied to the files together.
 */

/** What this hold learned about keys and directories is dropped (after a failure, or a delete that may prune directories). */
export function forget(s: JournalState, h: Held): void {
  h.states = undefined;
  h.unlisted = true;
  retireDirs(s, h);
}
/** New groups walk afresh; the cache closes once the groups already using it are applied. */
function retireDirs(s: JournalState, h: Held): void {
  if (!h.dirs) return;
  scheduleApply(s, h.dirs);
  h.dirs = undefined;
}

/** Queues a committed group's application to the files (or a cache to close after the groups before it). */
export function scheduleApply(s: JournalState, item: ApplyItem): void {
  s.toApply.push(item);
  s.applying ??= runApplies(s);
}

/**
 * Applies committed groups in commit order. Groups that queued up while one was applied are
 * applied together, each key to its last state only. A failure leaves the keys in
 * `pending` (reads still answer the acknowledged state) and the journal to replay: before
 * the next commit, `flush()`, or letting the lock go.
 */
async function runApplies(s: JournalState): Promise<void> {
  // Starts on the next turn of the event loop (after `applying` is set): the callers a commit
  // just answered resume before the apply's work, which would otherwise run ahead of them
  // in the microtask queue (the commit's answer without extra hops).
  await new Promise<void>((r) => setImmediate(r));
  await lull(s);
  const { toApply } = s;
  while (toApply.length > 0) {
    const head = toApply[0]!;
    if (!Array.isArray(head)) {
      toApply.shift();
      if ('reached' in head) head.reached();
      else await closeDirs(head);
      continue;
    }
    const cacheAt = toApply.findIndex((x) => !Array.isArray(x));
    const groups = toApply.splice(0, cacheAt === -1 ? toApply.length : cacheAt) as Planned[][];
    const planned = groups.flat();
    // From here on their temp files are the apply's: a later put no longer takes one over (takeOver).
    for (const p of planned) p.claimed = true;
    try {
      await applyMerged(s, planned);
    } catch {
      s.needRecovery = true;
      await discard(s, planned);
    }
  }
  s.applying = undefined;
}
/** Resolves once every group committed so far has been applied (or has failed to), applying them at once. */
export async function drain(s: JournalState): Promise<void> {
  s.hurrying++;
  try {
    s.hurry?.();
    while (s.applying) await s.applying;
  } finally {
    s.hurrying--;
  }
}

/** Waits until no commit has come for applyQuietMs, at most applyLagMs (see state.ts). */
async function lull(s: JournalState): Promise<void> {
  const since = performance.now();
  for (;;) {
    const now = performance.now();
    // A commit under way (or queued) counts as one now: a chain of puts, each issued as the one before is answered, is never paused.
    const last = s.running !== undefined ? now : s.lastCommitAt;
    const wait = Math.min(last + s.applyQuietMs, since + s.applyLagMs) - now;
    if (wait <= 0 || s.hurrying > 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      s.hurry = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    s.hurry = undefined;
  }
}
/** Resolves once the groups committed so far are applied (or failed to), whatever is committed after. */
export function appliedSoFar(s: JournalState): Promise<void> {
  return new Promise<void>((reached) => scheduleApply(s, { reached }));
}
