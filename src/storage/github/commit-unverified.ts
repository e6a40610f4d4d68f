import { commitFiles, type CommitFile } from './commit-reads.js';
import { verified, writesLanded, type TreeEntry, type TreePlan } from './commit-plan.js';
import { landedPaths, rewriteOf, type CommitRun } from './commit-run.js';
import type { RepoContext } from './context.js';
import type { KnownHead } from './head-state.js';
import type { RestorePath } from './restore.js';

/**
 * A commit of a batch that landed (its ref update answered 200) but whose read-back failed (a
 * rate limit, a lost answer), or one whose ref update got no answer (`lost`): it may have landed.
 */
export interface UnverifiedCommit {
  readonly commit: string;
  /** What the paths held before it. */
  readonly before: ReadonlyMap<string, string | null>;
  /** The paths it wrote. */
  readonly written: ReadonlySet<string>;
  /** The blob sha it sent for each path it wrote a file to (a delete has none). */
  readonly wrote?: ReadonlyMap<string, string>;
  /** Its ref update got no answer; `parent` is the head it was built on (while the branch still names it, it did not land). */
  readonly lost?: { readonly parent: string };
}

/**
 * Such commits, by adapter and by the batch they carried (keys and blob shas of the caller's
 * bytes). The batch sent again (the next attempt, or from the emergency queue, "maybe landed")
 * reads that commit back first: its files are its own write, not another writer's, even when
 * GitHub damaged them — else a create-only checkpoint file that landed corrupt would make its
 * batch conflict with itself forever. In memory only: a new process sees a plain conflict.
 */
const unverifiedCommits = new WeakMap<RepoContext, Map<string, UnverifiedCommit>>();

export function rememberUnverified(ctx: RepoContext, print: string, commit: UnverifiedCommit): void {
  let known = unverifiedCommits.get(ctx);
  if (!known) unverifiedCommits.set(ctx, (known = new Map()));
  known.set(print, commit);
  if (known.size > 100) known.delete(known.keys().next().value!); // bounded: the oldest go first
}

/**
 * Whether `path` holds `sha` because a commit of this adapter whose answer was lost wrote it
 * there: a batch sent again with other bytes elsewhere (a run index rebuilt, a lock renewed
 * meanwhile) has another fingerprint, so {@link settleEarlierAttempt} cannot find that commit,
 * yet its create-only checkpoint file, already stored with the very bytes it would write, is its
 * own landed write and not another writer's.
 */
export function ownUnverifiedWrite(ctx: RepoContext, path: string, sha: string): boolean {
  const known = unverifiedCommits.get(ctx);
  if (!known) return false;
  for (const commit of known.values()) if (commit.written.has(path) && commit.wrote?.get(path) === sha) return true;
  return false;
}

/** The blob sha each put of `run` sent, at the paths an attempt's tree `entries` wrote. */
export function wroteOf(run: CommitRun, entries: readonly TreeEntry[]): Map<string, string> {
  const paths = new Set(entries.map((e) => e.path));
  const wrote = new Map<string, string>();
  for (const p of run.items) if (p.op.type === 'put' && p.expected !== undefined && paths.has(p.path)) wrote.set(p.path, p.expected);
  return wrote;
}

/** What the paths of an attempt's commit held before it: its own head's, or the batch's first landed attempt's. */
export const beforeAttempt = (run: CommitRun, plan: TreePlan): ReadonlyMap<string, string | null> =>
  run.verifyFailures === 0 ? plan.before : run.original;

/**
 * An attempt whose ref update got no answer: remembered, so that the next attempt (or the
 * batch sent again from the queue) finds it by its sha if it landed, even with files that
 * GitHub stored otherwise than sent (which the head's listings alone cannot tell from another
 * writer's).
 */
export function rememberLost(
  ctx: RepoContext,
  run: CommitRun,
  attempt: { commit: string; parent: string; entries: readonly TreeEntry[]; plan: TreePlan },
): void {
  rememberUnverified(ctx, run.print, {
    commit: attempt.commit,
    before: beforeAttempt(run, attempt.plan),
    written: new Set(attempt.entries.map((e) => e.path)),
    wrote: wroteOf(run, attempt.entries),
    lost: { parent: attempt.parent },
  });
}

/**
 * After a lost answer: did our commit land (perhaps with others on top)? Resolves true when
 * it did as sent (the batch is done). A commit of the batch that landed unverified is read
 * back now, and only what it did not store as sent is rewritten (`run.items`, `damage.paths`).
 */
export async function settleEarlierAttempt(
  ctx: RepoContext,
  run: CommitRun,
  head: KnownHead,
  damage: { paths: RestorePath[] },
): Promise<boolean> {
  const earlier = run.ambiguous ? unverifiedCommits.get(ctx)?.get(run.print) : undefined;
  if (earlier) unverifiedCommits.get(ctx)?.delete(run.print);
  // A lost attempt that stored everything as sent needs no read-back: the listings tell.
  const files = earlier && !(earlier.lost && writesLanded(ctx, run.items)) ? await landedFiles(ctx, run.print, head, earlier) : undefined;
  if (earlier && files) {
    // It landed, unverified: rewrite only what it did not store as sent.
    const bad = run.items.filter((p) => p.op.type !== 'check' && earlier.written.has(p.path) && !verified(p, files.get(p.path)));
    if (bad.length === 0) {
      ctx.emit({ type: 'landed_after_timeout', level: 'info', keys: run.keys });
      return true;
    }
    for (const [path, sha] of earlier.before) run.original.set(path, sha);
    damage.paths = landedPaths(run, bad, new Map(bad.map((p) => [p.path, files.get(p.path)?.sha ?? null])));
    run.verifyFailures++;
    ctx.emit({ type: 'verify_retry', level: 'warn', attempt: run.verifyFailures, keys: bad.map((p) => p.op.key) });
    run.items = rewriteOf(bad);
    run.conditionsChecked = true;
    run.ambiguous = false;
  }
  if (run.ambiguous) {
    if (writesLanded(ctx, run.items)) {
      ctx.emit({ type: 'landed_after_timeout', level: 'info', keys: run.keys });
      return true;
    }
    run.ambiguous = false;
  }
  return false;
}

/**
 * The files `earlier` changed, read back by its sha; undefined when it is a lost attempt that
 * did not land: the branch still names the head it was built on, or the head's listings do
 * not hold what it stored (a blob GitHub damaged is still recognised as ours by its sha).
 */
async function landedFiles(
  ctx: RepoContext,
  print: string,
  head: KnownHead,
  earlier: UnverifiedCommit,
): Promise<Map<string, CommitFile> | undefined> {
  if (earlier.lost && head.commit === earlier.lost.parent) return undefined;
  let files: Map<string, CommitFile>;
  try {
    files = await commitFiles(ctx, earlier.commit);
  } catch (err) {
    rememberUnverified(ctx, print, earlier);
    throw err;
  }
  return earlier.lost && !headHolds(ctx, earlier.written, files) ? undefined : files;
}

/** Whether the head's listings hold every change a commit's diff shows at the paths it wrote. */
function headHolds(ctx: RepoContext, written: ReadonlySet<string>, files: ReadonlyMap<string, CommitFile>): boolean {
  const changed = [...written].filter((path) => files.has(path));
  return (
    changed.length > 0 &&
    changed.every((path) => {
      const stored = files.get(path)!;
      const cur = ctx.state.fileAt(path);
      return stored.status === 'removed' ? cur === null : cur?.sha === stored.sha;
    })
  );
}
