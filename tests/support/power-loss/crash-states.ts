/**
 * The on-disk states a power loss can leave after a recorded sequence of calls (the ALICE
 * and LazyFS approach), under POSIX rules: a crash after any prefix of the calls; of that
 * prefix, a write or truncate survives for sure only once its file was fsynced (or it went
 * through an O_DSYNC/O_SYNC descriptor), a name change (create, rename, link, unlink,
 * mkdir, rmdir) only once its directory was fsynced; any subset of the others may survive,
 * and a write may survive torn (its first half). Not every subset is tried: for each crash
 * point, none and all of the unsynced calls, one alone dropped, one alone kept and the
 * calls before it (for the last four and six spread over the others), a torn last write, and a few seeded random subsets — then
 * states holding the same tree are checked once.
 */
import { applyOp, cloneTree, digestTree, type Op, type Tree } from './model.js';

/** One crash state: the tree, and the checkpoints acknowledged before the crash. */
export interface CrashState {
  readonly tree: Tree;
  readonly acked: readonly { readonly run: string; readonly sequence: number }[];
  /** How it was made, for messages: the crash point and which unsynced calls survived. */
  readonly label: string;
}

/** Whether call `i` surely survives a crash at `k` (calls 0…k-1 were made). */
function durable(ops: readonly Op[], i: number, k: number): boolean {
  const op = ops[i]!;
  const later = (test: (o: Op) => boolean): boolean => {
    for (let j = i + 1; j < k; j++) if (test(ops[j]!)) return true;
    return false;
  };
  switch (op.t) {
    case 'write':
    case 'trunc':
      return op.synced || later((o) => o.t === 'fsync' && o.ino === op.ino);
    case 'create':
    case 'unlink':
    case 'mkdir':
    case 'rmdir':
      return later((o) => o.t === 'dsync' && o.dir === op.dir);
    case 'rename':
    case 'link':
      return (
        later((o) => o.t === 'dsync' && o.dir === op.toDir) &&
        (op.fromDir === op.toDir || later((o) => o.t === 'dsync' && o.dir === op.fromDir))
      );
    default:
      return true;
  }
}

/** A small seeded generator (mulberry32): the same states on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Which unsynced calls survive, for one crash point (indexes into `optional`), and which write is torn. */
interface Choice {
  readonly keep: ReadonlySet<number>;
  readonly torn?: number;
  readonly how: string;
}

function choices(optional: readonly number[], ops: readonly Op[], random: () => number, randomCount: number): Choice[] {
  const n = optional.length;
  const all = new Set(optional.map((_, i) => i));
  const out: Choice[] = [
    { keep: new Set(), how: 'none' },
    { keep: all, how: 'all' },
  ];
  // Each call alone: the last few (the ones a crash most often catches) and a few spread over the rest.
  const picked = new Set<number>();
  for (let i = Math.max(0, n - 4); i < n; i++) picked.add(i);
  for (let j = 0; j < 6 && n > 4; j++) picked.add(Math.floor((j * (n - 4)) / 6));
  for (const i of picked) {
    out.push({ keep: new Set([...all].filter((x) => x !== i)), how: `all but ${i}` });
    out.push({ keep: new Set([i]), how: `only ${i}` });
    out.push({ keep: new Set([...all].filter((x) => x < i)), how: `first ${i}` });
  }
  const lastWrite = [...optional.keys()].reverse().find((i) => ops[optional[i]!]!.t === 'write');
  if (lastWrite !== undefined) {
    out.push({ keep: all, torn: lastWrite, how: 'all, last write torn' });
    out.push({ keep: new Set([lastWrite]), torn: lastWrite, how: 'only the last write, torn' });
  }
  for (let r = 0; r < randomCount && n > 1; r++) {
    const keep = new Set([...all].filter(() => random() < 0.5));
    out.push({ keep, how: `random ${[...keep].join(',')}` });
  }
  return out;
}

/** Builds the tree of one choice at crash point `k`. */
function build(base: Tree, ops: readonly Op[], k: number, optional: readonly number[], choice: Choice): Tree {
  const tree = cloneTree(base);
  const owned = new Set<number>();
  const optionalAt = new Map(optional.map((opIndex, i) => [opIndex, i]));
  for (let i = 0; i < k; i++) {
    const op = ops[i]!;
    const o = optionalAt.get(i);
    if (o !== undefined && !choice.keep.has(o)) continue;
    const torn = o !== undefined && choice.torn === o && op.t === 'write' ? Math.floor(op.bytes.length / 2) : undefined;
    applyOp(tree, op, torn, owned);
  }
  return tree;
}

/** Every distinct crash state of `ops` from `base`, passed to `check` one at a time. Returns how many states were checked. */
export async function forEachCrashState(
  base: Tree,
  ops: readonly Op[],
  check: (state: CrashState) => Promise<void>,
  options: { readonly randomPerPoint?: number; readonly seed?: number } = {},
): Promise<number> {
  const random = seeded(options.seed ?? 1);
  const seen = new Set<string>();
  for (let k = 0; k <= ops.length; k++) {
    // Crash points between calls (an acknowledgement is not a call).
    if (k > 0 && ops[k - 1]!.t === 'ack') continue;
    const optional: number[] = [];
    for (let i = 0; i < k; i++) {
      const t = ops[i]!.t;
      if (t !== 'ack' && t !== 'fsync' && t !== 'dsync' && !durable(ops, i, k)) optional.push(i);
    }
    const acked = ops.slice(0, k).flatMap((o) => (o.t === 'ack' ? [{ run: o.run, sequence: o.sequence }] : []));
    for (const choice of choices(optional, ops, random, options.randomPerPoint ?? 4)) {
      const tree = build(base, ops, k, optional, choice);
      const digest = digestTree(tree);
      if (seen.has(digest)) continue;
      seen.add(digest);
      await check({
        tree,
        acked,
        label: `crash after call ${k} of ${ops.length}, unsynced calls kept: ${choice.how} of ${optional.length}`,
      });
    }
  }
  return seen.size;
}

/** The tree only the calls of `ops` that surely survive a crash after the last of them leave. */
export function durableState(base: Tree, ops: readonly Op[]): Tree {
  const optional: number[] = [];
  for (let i = 0; i < ops.length; i++) if (!durable(ops, i, ops.length)) optional.push(i);
  return build(base, ops, ops.length, optional, { keep: new Set(), how: 'none' });
}
