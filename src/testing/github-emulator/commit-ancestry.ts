import type { GitStore } from './git-store.js';

/** How `head` relates to `base`, as GitHub's compare endpoint reports it. */
export interface Ancestry {
  readonly status: 'ahead' | 'behind' | 'identical' | 'diverged';
  /** Commits reachable from head and not from base. */
  readonly aheadBy: number;
  /** Commits reachable from base and not from head. */
  readonly behindBy: number;
  readonly mergeBase: string;
  /** The `aheadBy` commits, oldest first (parents before children). */
  readonly commits: readonly string[];
}

/** Every commit reachable from `start`, in breadth-first order from it. */
function reachable(store: GitStore, start: string): string[] {
  const order: string[] = [];
  const seen = new Set<string>([start]);
  for (let i = 0, queue = [start]; i < queue.length; i++) {
    const sha = queue[i]!;
    order.push(sha);
    const obj = store.get(sha);
    if (obj?.type !== 'commit') continue;
    for (const p of obj.commit.parents) {
      if (!seen.has(p)) {
        seen.add(p);
        queue.push(p);
      }
    }
  }
  return order;
}

/**
 * Compares two commits the way `GET /repos/{owner}/{repo}/compare/{base}...{head}` does;
 * `undefined` when they share no history. The merge base is the nearest common ancestor
 * by breadth from head (exact for the linear and simply-forked histories the emulator sees).
 */
export function compareAncestry(store: GitStore, base: string, head: string): Ancestry | undefined {
  const fromHead = reachable(store, head);
  const fromBase = new Set(reachable(store, base));
  const headSet = new Set(fromHead);
  const mergeBase = fromHead.find((sha) => fromBase.has(sha));
  if (mergeBase === undefined) return undefined;
  const ahead = fromHead.filter((sha) => !fromBase.has(sha)).reverse();
  const behindBy = [...fromBase].filter((sha) => !headSet.has(sha)).length;
  const aheadBy = ahead.length;
  const status = aheadBy === 0 ? (behindBy === 0 ? 'identical' : 'behind') : behindBy === 0 ? 'ahead' : 'diverged';
  return { status, aheadBy, behindBy, mergeBase, commits: ahead };
}
