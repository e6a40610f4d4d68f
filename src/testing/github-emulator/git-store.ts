import { createHash } from 'node:crypto';
import { assertArrayArgument, assertBytesArgument, assertObjectArgument } from '../../contract/arguments.js';

/** Modes GitHub's tree API accepts, as the API spells them. */
export type GitMode = '100644' | '100755' | '040000' | '160000' | '120000';
/** Kinds of git objects. */
export type GitObjectType = 'blob' | 'tree' | 'commit';

/** One entry of a tree object. */
export interface GitTreeEntry {
  readonly mode: GitMode;
  readonly type: GitObjectType;
  /** A single path segment. */
  readonly name: string;
  readonly sha: string;
}

/** An author or committer line. `date` is ISO 8601 (with `Z` or a `±hh:mm` offset). */
export interface GitSignature {
  readonly name: string;
  readonly email: string;
  readonly date: string;
}

/** The parsed content of a commit object. */
export interface GitCommitData {
  readonly tree: string;
  readonly parents: readonly string[];
  readonly author: GitSignature;
  readonly committer: GitSignature;
  readonly message: string;
}

/** A stored object. */
export type GitObject =
  | { readonly type: 'blob'; readonly data: Buffer }
  | { readonly type: 'tree'; readonly entries: readonly GitTreeEntry[] }
  | { readonly type: 'commit'; readonly commit: GitCommitData };

/** One file of a recursive tree listing. */
export interface GitPathEntry {
  readonly path: string;
  readonly mode: GitMode;
  readonly type: GitObjectType;
  readonly sha: string;
  /** Blob size in bytes (absent for trees and submodules). */
  readonly size?: number;
}

/** A change to apply to a tree: a path and what it should hold (`null` deletes it). */
export interface GitTreeChange {
  readonly path: string;
  readonly entry: { readonly mode: GitMode; readonly type: GitObjectType; readonly sha: string } | null;
}

/** Why a tree change could not be applied (GitHub answers these with 422). */
export class GitTreeError extends Error {}

const sha1 = (header: string, body: Buffer): string => createHash('sha1').update(header).update(body).digest('hex');

/** Git's object id of a blob: SHA-1 of `blob <size>\0<bytes>`, exactly as `git hash-object` computes it. */
export function blobSha(data: Uint8Array): string {
  assertBytesArgument(data, 'gitBlobShaOf', 'data');
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return sha1(`blob ${body.length}\0`, body);
}

// Git sorts tree entries by name bytes, comparing a tree's name as if it ended in '/'.
function sortKey(entry: Pick<GitTreeEntry, 'name' | 'type'>): Buffer {
  return Buffer.from(entry.type === 'tree' ? `${entry.name}/` : entry.name, 'utf8');
}

/** The bytes of a tree object (without the `tree <size>\0` header), as git writes them. */
export function encodeTree(entries: readonly GitTreeEntry[]): Buffer {
  const sorted = [...entries].sort((a, b) => Buffer.compare(sortKey(a), sortKey(b)));
  const parts: Buffer[] = [];
  for (const e of sorted) {
    // Git writes the directory mode without its leading zero.
    const mode = e.mode === '040000' ? '40000' : e.mode;
    parts.push(Buffer.from(`${mode} ${e.name}\0`, 'utf8'), Buffer.from(e.sha, 'hex'));
  }
  return Buffer.concat(parts);
}

function gitDate(iso: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new GitTreeError(`invalid date ${iso}`);
  const m = /([+-])(\d\d):?(\d\d)$/.exec(iso);
  const tz = m && !iso.endsWith('Z') ? `${m[1]}${m[2]}${m[3]}` : '+0000';
  return `${Math.floor(ms / 1000)} ${tz}`;
}

/** The bytes of a commit object (without its header), as `git commit-tree` writes them. */
export function encodeCommit(c: GitCommitData): Buffer {
  const lines = [`tree ${c.tree}`, ...c.parents.map((p) => `parent ${p}`)];
  lines.push(`author ${c.author.name} <${c.author.email}> ${gitDate(c.author.date)}`);
  lines.push(`committer ${c.committer.name} <${c.committer.email}> ${gitDate(c.committer.date)}`);
  return Buffer.from(`${lines.join('\n')}\n\n${c.message}`, 'utf8');
}

/** The object id of a tree with these entries. */
export function treeSha(entries: readonly GitTreeEntry[]): string {
  assertArrayArgument(entries, 'gitTreeShaOf', 'entries');
  const body = encodeTree(entries);
  return sha1(`tree ${body.length}\0`, body);
}

/** The object id of a commit. */
export function commitSha(c: GitCommitData): string {
  assertObjectArgument(c, 'gitCommitShaOf', 'commit');
  assertArrayArgument(c.parents, 'gitCommitShaOf', 'commit.parents');
  assertObjectArgument(c.author, 'gitCommitShaOf', 'commit.author');
  assertObjectArgument(c.committer, 'gitCommitShaOf', 'commit.committer');
  const body = encodeCommit(c);
  return sha1(`commit ${body.length}\0`, body);
}

/**
 * A content-addressed git object database with refs: what the emulator keeps instead of
 * a repository on disk. Object ids are computed exactly as git computes them, so a
 * version savepoint reads from the emulator is the one GitHub would report.
 */
export interface GitStore {
  readonly objects: ReadonlyMap<string, GitObject>;
  /** Branch name → commit sha. */
  readonly refs: Map<string, string>;
  putBlob(data: Uint8Array): string;
  putTree(entries: readonly GitTreeEntry[]): string;
  putCommit(commit: GitCommitData): string;
  get(sha: string): GitObject | undefined;
  /** The entry at `path` inside tree `tree`, or undefined. */
  entryAt(tree: string, path: string): GitPathEntry | undefined;
  /** Every entry below `tree`, depth first, in git order; trees included. */
  walk(tree: string, prefix?: string): GitPathEntry[];
  /** A new tree: `base` (or the empty tree) with `changes` applied. Throws {@link GitTreeError}. */
  applyChanges(base: string | undefined, changes: readonly GitTreeChange[]): string;
  /** True when `ancestor` is `commit` or one of its ancestors. */
  isAncestor(ancestor: string, commit: string): boolean;
}

/** The object database and refs a {@link GitStore} keeps. */
interface GitStoreState {
  readonly objects: Map<string, GitObject>;
  readonly refs: Map<string, string>;
}

/** Creates an empty object database. */
export function createGitStore(): GitStore {
  const db: GitStoreState = { objects: new Map(), refs: new Map() };
  const { objects } = db;
  return {
    objects,
    refs: db.refs,
    putBlob(data) {
      const sha = blobSha(data);
      if (!objects.has(sha)) objects.set(sha, { type: 'blob', data: Buffer.from(data) });
      return sha;
    },
    putTree: (entries) => putTree(db, entries),
    putCommit(commit) {
      const sha = commitSha(commit);
      if (!objects.has(sha)) objects.set(sha, { type: 'commit', commit });
      return sha;
    },
    get: (sha) => objects.get(sha),
    entryAt: (root, path) => entryAt(db, root, path),
    walk: (root, prefix) => walk(db, root, prefix),
    applyChanges: (base, changes) => applyChanges(db, base, changes),
    isAncestor: (ancestor, commit) => isAncestor(db, ancestor, commit),
  };
}

function treeEntries(db: GitStoreState, sha: string): readonly GitTreeEntry[] {
  const obj = db.objects.get(sha);
  if (obj?.type !== 'tree') throw new GitTreeError(`${sha} is not a tree`);
  return obj.entries;
}

function putTree(db: GitStoreState, entries: readonly GitTreeEntry[]): string {
  const names = new Set<string>();
  for (const e of entries) {
    if (e.name === '' || e.name.includes('/') || e.name === '.' || e.name === '..')
      throw new GitTreeError(`invalid tree entry name "${e.name}"`);
    if (names.has(e.name)) throw new GitTreeError(`duplicate tree entry "${e.name}"`);
    names.add(e.name);
  }
  const sha = treeSha(entries);
  if (!db.objects.has(sha))
    db.objects.set(sha, { type: 'tree', entries: [...entries].sort((a, b) => Buffer.compare(sortKey(a), sortKey(b))) });
  return sha;
}

function entryAt(db: GitStoreState, root: string, path: string): GitPathEntry | undefined {
  const segments = path.split('/');
  let current = root;
  for (let i = 0; i < segments.length; i++) {
    const entry = treeEntries(db, current).find((e) => e.name === segments[i]);
    if (!entry) return undefined;
    if (i === segments.length - 1) {
      const obj = db.objects.get(entry.sha);
      return { path, mode: entry.mode, type: entry.type, sha: entry.sha, ...(obj?.type === 'blob' ? { size: obj.data.length } : {}) };
    }
    if (entry.type !== 'tree') return undefined;
    current = entry.sha;
  }
  return undefined;
}

function walk(db: GitStoreState, root: string, prefix = ''): GitPathEntry[] {
  const out: GitPathEntry[] = [];
  for (const e of treeEntries(db, root)) {
    const path = prefix === '' ? e.name : `${prefix}/${e.name}`;
    const obj = db.objects.get(e.sha);
    out.push({ path, mode: e.mode, type: e.type, sha: e.sha, ...(obj?.type === 'blob' ? { size: obj.data.length } : {}) });
    if (e.type === 'tree') out.push(...walk(db, e.sha, path));
  }
  return out;
}

function applyChanges(db: GitStoreState, base: string | undefined, changes: readonly GitTreeChange[]): string {
  for (const c of changes) {
    if (
      c.path === '' ||
      c.path.startsWith('/') ||
      c.path.endsWith('/') ||
      c.path.split('/').some((s) => s === '' || s === '.' || s === '..')
    ) {
      throw new GitTreeError(`invalid path "${c.path}"`);
    }
  }
  return rebuild(db, base, changes, true) ?? putTree(db, []);
}

/** Group changes by first segment and rebuild only the subtrees they touch. */
function rebuild(db: GitStoreState, treeSha: string | undefined, list: readonly GitTreeChange[], root: boolean): string | undefined {
  const entries = new Map<string, GitTreeEntry>();
  if (treeSha !== undefined) for (const e of treeEntries(db, treeSha)) entries.set(e.name, e);
  const nested = new Map<string, GitTreeChange[]>();
  for (const change of list) {
    const slash = change.path.indexOf('/');
    if (slash === -1) {
      if (change.entry === null) {
        if (!entries.has(change.path)) throw new GitTreeError(`cannot delete ${change.path}: not in the base tree`);
        entries.delete(change.path);
      } else {
        entries.set(change.path, { name: change.path, ...change.entry });
      }
      continue;
    }
    const head = change.path.slice(0, slash);
    const rest = { path: change.path.slice(slash + 1), entry: change.entry };
    const bucket = nested.get(head);
    if (bucket) bucket.push(rest);
    else nested.set(head, [rest]);
  }
  for (const [name, list2] of nested) {
    const existing = entries.get(name);
    if (existing && existing.type !== 'tree') {
      if (list2.every((c) => c.entry === null)) throw new GitTreeError(`cannot delete below ${name}: it is not a directory`);
      entries.delete(name); // a file replaced by a directory, as git allows
    }
    const sub = rebuild(db, existing?.type === 'tree' ? existing.sha : undefined, list2, false);
    if (sub === undefined) entries.delete(name);
    else entries.set(name, { name, mode: '040000', type: 'tree', sha: sub });
  }
  // Git has no empty directories: a subtree left empty disappears (the root stays, as the empty tree).
  if (entries.size === 0 && !root) return undefined;
  return putTree(db, [...entries.values()]);
}

function isAncestor(db: GitStoreState, ancestor: string, commit: string): boolean {
  const seen = new Set<string>();
  const stack = [commit];
  while (stack.length > 0) {
    const sha = stack.pop()!;
    if (sha === ancestor) return true;
    if (seen.has(sha)) continue;
    seen.add(sha);
    const obj = db.objects.get(sha);
    if (obj?.type === 'commit') stack.push(...obj.commit.parents);
  }
  return false;
}
