import type { CommitFile } from './commit-reads.js';
import type { Prepared } from './commit-run.js';
import type { RepoContext } from './context.js';
import { asUtf8Text } from '../../codec/base64.js';

/** One entry of a tree to create on top of the head (`sha: null` removes the path). */
export interface TreeEntry {
  readonly path: string;
  readonly mode: '100644';
  readonly type: 'blob';
  readonly sha?: string | null;
  readonly content?: string;
}

/** A tree entry as planned: ready, or a blob still to upload (binary or large files). */
export type PlannedEntry = { readonly entry: TreeEntry } | { readonly upload: Prepared };

/** A path as the commit leaves it: its blob sha (null: removed) and size. */
export interface PathChange {
  readonly path: string;
  readonly sha: string | null;
  readonly size: number;
}

/** What one attempt writes, planned against the head's listings before any request. */
export interface TreePlan {
  readonly entries: readonly PlannedEntry[];
  /** Every written path as the commit leaves it (also the paths already holding their bytes). */
  readonly changes: readonly PathChange[];
  /** What each written path holds in the head. */
  readonly before: ReadonlyMap<string, string | null>;
  /** For each delete: whether the path holds a file in the head. */
  readonly existed: ReadonlyMap<Prepared, boolean>;
}

/** Whether the commit's diff shows `p` as it was meant: the expected blob, or the path removed. */
export const verified = (p: Prepared, f: CommitFile | undefined): boolean =>
  p.op.type === 'put' ? f?.sha === p.expected && f?.status !== 'removed' : f?.status === 'removed';

/** Whether the head's listings show every write of `items` as sent (a check wrote nothing: only the writes tell). */
export function writesLanded(ctx: RepoContext, items: readonly Prepared[]): boolean {
  const writes = items.filter((p) => p.op.type !== 'check');
  return (
    writes.length > 0 &&
    writes.every((p) => {
      const cur = ctx.state.fileAt(p.path);
      return p.op.type === 'put' ? cur?.sha === p.expected : cur === null;
    })
  );
}

/** The tree on top of the head: text inline, binary or large files as blobs; what is already stored is left out. */
export function planTree(ctx: RepoContext, items: readonly Prepared[]): TreePlan {
  const entries: PlannedEntry[] = [];
  const changes: PathChange[] = [];
  const before = new Map<string, string | null>();
  const existed = new Map<Prepared, boolean>();
  for (const p of items) {
    if (p.op.type === 'check') continue; // a fence, held above against this very base tree: nothing to write
    const cur = ctx.state.fileAt(p.path);
    before.set(p.path, cur?.sha ?? null);
    if (p.op.type === 'delete') {
      const there = cur !== null && cur !== undefined;
      existed.set(p, there);
      if (there) {
        entries.push({ entry: { path: p.path, mode: '100644', type: 'blob', sha: null } });
        changes.push({ path: p.path, sha: null, size: 0 });
      }
      continue;
    }
    const bytes = p.bytes!;
    changes.push({ path: p.path, sha: p.expected!, size: bytes.length });
    if (cur?.sha === p.expected) continue; // already stored: no change to make
    const text = bytes.length <= ctx.inlineMaxBytes ? asUtf8Text(bytes) : undefined;
    entries.push(text !== undefined ? { entry: { path: p.path, mode: '100644', type: 'blob', content: text } } : { upload: p });
  }
  return { entries, changes, before, existed };
}

/**
 * What a landed commit's diff says: the items it did not store as sent (`bad`), and the
 * changes as GitHub actually stored them. A file in the tree but not in the diff did not
 * change: it holds what it held.
 */
export function readBackOf(
  items: readonly Prepared[],
  entries: readonly TreeEntry[],
  plan: TreePlan,
  files: ReadonlyMap<string, CommitFile>,
): { bad: Prepared[]; changes: PathChange[] } {
  const bad: Prepared[] = [];
  for (const p of items) {
    const inCommit = entries.some((e) => e.path === p.path);
    if (inCommit && !verified(p, files.get(p.path))) bad.push(p);
  }
  const changes = plan.changes.map((c): PathChange => {
    const f = files.get(c.path);
    if (f) return { ...c, sha: f.status === 'removed' ? null : (f.sha ?? c.sha) };
    if (entries.some((e) => e.path === c.path)) return { ...c, sha: plan.before.get(c.path) ?? null };
    return c;
  });
  return { bad, changes };
}
