import type { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import type { RepoContext } from './context.js';
import { gitBlobSha } from './git-blob.js';
import type { RestorePath } from './restore.js';

/** What one commit writes or checks at one path. */
export interface Prepared {
  readonly op: BatchOperation;
  readonly path: string;
  /** What is written this attempt (the caller's bytes, or a merged index). */
  bytes?: Uint8Array;
  /** The git blob sha of `bytes`: the version the put gets. */
  expected?: string;
  /** For a delete: whether the path held a file. */
  existed?: boolean;
}

/** How a commit is described (its message) and whether an earlier attempt of it may have landed. */
export type CommitOptions = { operation: 'batch' | 'put' | 'delete'; maybeLanded?: boolean };

/** The state of one {@link commitOperations}' attempts, from its first request to its outcome. */
export interface CommitRun {
  /** What the next attempt writes: every operation, or after a landed attempt only what did not verify. */
  items: Prepared[];
  /** Every operation of the batch, for the outcomes. */
  readonly all: readonly Prepared[];
  /** The batch's fingerprint (types, paths, blob shas): how an unverified landed commit of it is found again. */
  readonly print: string;
  readonly keys: readonly string[];
  /** An earlier attempt may have landed (its answer was lost): check before writing. */
  ambiguous: boolean;
  /** Lost answers so far (see sendWrite). */
  readonly lost: { count: number };
  /** Ref updates that lost the race to another commit. */
  races: number;
  /** Landed attempts that did not verify. */
  verifyFailures: number;
  /** Ref updates sent: every attempt counts, whatever made the one before fail (spec: "max 3 attempts"). */
  sent: number;
  /** Why the last ref update got no answer. */
  lastLost: CheckpointError | undefined;
  /** The conditions hold already (the rewrite of what did not verify): not checked again. */
  conditionsChecked: boolean;
  /** What each path held before the first landed commit of this batch. */
  readonly original: Map<string, string | null>;
}

const batchPrint = (items: readonly Prepared[]): string => JSON.stringify(items.map((p) => [p.op.type, p.path, p.expected ?? null]));

/** The run of a new commit of `ops`: each put's blob sha computed. */
export async function startCommitRun(ctx: RepoContext, ops: readonly BatchOperation[], options: CommitOptions): Promise<CommitRun> {
  const items: Prepared[] = await Promise.all(
    ops.map(async (op) => ({
      op,
      path: ctx.toPath(op.key),
      ...(op.type === 'put' ? { bytes: op.bytes, expected: await gitBlobSha(op.bytes) } : {}),
    })),
  );
  return {
    items,
    all: items,
    print: batchPrint(items),
    keys: ops.map((o) => o.key),
    ambiguous: options.maybeLanded ?? false,
    lost: { count: 0 },
    races: 0,
    verifyFailures: 0,
    sent: 0,
    lastLost: undefined,
    conditionsChecked: false,
    original: new Map(),
  };
}

/** What the batch reports: each put's version, each delete's `existed`, each check. */
export function outcomesOf(run: CommitRun): BatchOutcome[] {
  return run.all.map((p): BatchOutcome =>
    p.op.type === 'put'
      ? { type: 'put', key: p.op.key, version: p.expected! }
      : p.op.type === 'delete'
        ? { type: 'delete', key: p.op.key, existed: p.existed ?? false }
        : { type: 'check', key: p.op.key },
  );
}

/** A merged index is rebuilt from the caller's bytes against each new head. */
export async function resetMerges(run: CommitRun): Promise<void> {
  for (const p of run.items) {
    if (p.op.type !== 'put' || p.bytes === p.op.bytes) continue;
    p.bytes = p.op.bytes;
    p.expected = await gitBlobSha(p.op.bytes);
  }
}

/** The rewrite of what did not verify: unconditional (its conditions held when it first landed). */
export const rewriteOf = (bad: readonly Prepared[]): Prepared[] =>
  bad.map((p) => ({
    op: p.op.type === 'put' ? { type: 'put', key: p.op.key, bytes: p.bytes! } : { type: 'delete', key: p.op.key },
    path: p.path,
    ...(p.bytes ? { bytes: p.bytes, expected: p.expected! } : {}),
    existed: p.existed ?? false,
  }));

/**
 * What to put back when the batch fails after one of its commits landed: every path the landed
 * commits changed, the puts that verified and the deletes as well as what GitHub stored otherwise
 * (`bad`), each at what it held before the batch. A failed batch leaves nothing of itself: a
 * delete left in place loses the file it removed (a checkpoint a batch file was to replace).
 * `stored`: what a read-back found at the paths of `bad` (their `left`), when it was read.
 */
export function landedPaths(run: CommitRun, bad: readonly Prepared[], stored?: ReadonlyMap<string, string | null>): RestorePath[] {
  const badPaths = new Set(bad.map((p) => p.path));
  const paths: RestorePath[] = [];
  for (const p of run.all) {
    if (p.op.type === 'check' || !run.original.has(p.path)) continue;
    const sha = run.original.get(p.path) ?? null;
    if (!badPaths.has(p.path)) paths.push({ path: p.path, sha, left: p.op.type === 'put' ? (p.expected ?? null) : null });
    else paths.push(stored ? { path: p.path, sha, left: stored.get(p.path) ?? null } : { path: p.path, sha });
  }
  return paths;
}
