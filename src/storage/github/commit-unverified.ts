import { commitFiles, type CommitFile } from './commit-reads.js';
import { verified, writesLanded } from './commit-plan.js';
import { rewriteOf, type CommitRun } from './commit-run.js';
import type { RepoContext } from './context.js';
import type { RestorePath } from './restore.js';

/** A commit of a batch that landed (its ref update answered 200) but whose read-back failed (a rate limit, a lost answer). */
export interface UnverifiedCommit {
  readonly commit: string;
  /** What the paths held before it. */
  readonly before: ReadonlyMap<string, string | null>;
  /** The paths it wrote. */
  readonly written: ReadonlySet<string>;
}

/**
 * Such commits, by adapter and by the batch they carried (keys and blob shas of the caller's
 * bytes). The batch sent again (from the emergency queue, "maybe landed") reads that commit
 * back first: its files are its own write, not another writer's, even when GitHub damaged them
 * — else a create-only checkpoint file that landed corrupt would make its queued batch
 * conflict with itself forever. In memory only: a new process sees a plain conflict.
 */
const unverifiedCommits = new WeakMap<RepoContext, Map<string, UnverifiedCommit>>();

export function rememberUnverified(ctx: RepoContext, print: string, commit: UnverifiedCommit): void {
  let known = unverifiedCommits.get(ctx);
  if (!known) unverifiedCommits.set(ctx, (known = new Map()));
  known.set(print, commit);
  if (known.size > 100) known.delete(known.keys().next().value!); // bounded: the oldest go first
}

/**
 * After a lost answer: did our commit land (perhaps with others on top)? Resolves true when
 * it did as sent (the batch is done). A landed commit known unverified is read back now, and
 * only what it did not store as sent is rewritten (`run.items`, `damage.paths`).
 */
export async function settleEarlierAttempt(ctx: RepoContext, run: CommitRun, damage: { paths: RestorePath[] }): Promise<boolean> {
  const earlier = run.ambiguous ? unverifiedCommits.get(ctx)?.get(run.print) : undefined;
  if (earlier) {
    // It did, unverified: read it back now, and rewrite only what it did not store as sent.
    unverifiedCommits.get(ctx)?.delete(run.print);
    let files: Map<string, CommitFile>;
    try {
      files = await commitFiles(ctx, earlier.commit);
    } catch (err) {
      rememberUnverified(ctx, run.print, earlier);
      throw err;
    }
    const bad = run.items.filter((p) => p.op.type !== 'check' && earlier.written.has(p.path) && !verified(p, files.get(p.path)));
    if (bad.length === 0) {
      ctx.emit({ type: 'landed_after_timeout', level: 'info', keys: run.keys });
      return true;
    }
    for (const [path, sha] of earlier.before) run.original.set(path, sha);
    damage.paths = bad.map((p) => ({ path: p.path, sha: run.original.get(p.path) ?? null, left: files.get(p.path)?.sha ?? null }));
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
