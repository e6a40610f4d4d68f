import { dirOf, nameOf } from './context.js';

/** A branch head this adapter knows: the commit, its tree, and when it learned it. */
export interface KnownHead {
  readonly commit: string;
  readonly tree: string;
  readonly atMs: number;
}

/** A file or directory in a known directory listing. */
export interface KnownEntry {
  readonly sha: string;
  readonly type: 'file' | 'dir' | 'other';
  readonly size: number;
}

/** A write this adapter made, remembered for read-your-writes. */
export interface OwnWrite {
  /** Blob sha written, or null for a delete. */
  readonly sha: string | null;
  readonly size: number;
  /** The commit that made it. */
  readonly commit: string;
  readonly atMs: number;
}

/**
 * What githubStorage knows about the branch without asking: the head it last created
 * or read, complete listings of the directories it looked at *in that head*, and its own
 * recent writes. A cached head lets a commit cost 3 requests instead of 5: conditions
 * are checked against the listings, and `force: false` on the ref update catches any
 * other writer that moved the branch meanwhile.
 */
export interface HeadState {
  readonly head: KnownHead | undefined;
  /** Sets the head; listings survive only when `keepListings` (the new head is our own commit on top of the old). */
  setHead(head: KnownHead, keepListings: boolean): void;
  /** Forgets the head and every listing (someone else moved the branch). */
  invalidate(): void;
  /** The complete listing of `dir` at the head, if known. */
  listing(dir: string): ReadonlyMap<string, KnownEntry> | undefined;
  setListing(dir: string, entries: ReadonlyMap<string, KnownEntry>): void;
  /** The file at `path` in the head: an entry, `null` when known absent, `undefined` when unknown. */
  fileAt(path: string): KnownEntry | null | undefined;
  /** Applies our own commit's changes to the listings. */
  applyChanges(changes: readonly { path: string; sha: string | null; size: number }[]): void;
  /** Remembers our own writes for read-your-writes. */
  recordOwnWrites(commit: string, atMs: number, changes: readonly { path: string; sha: string | null; size: number }[]): void;
  /** Our own writes made after `sinceMs`, by path. */
  ownWrites(sinceMs: number): ReadonlyMap<string, OwnWrite>;
  /** Forgets our writes of `paths` (they were undone): reads go to the branch again. */
  forgetOwnWrites(paths: readonly string[]): void;
}

/** Creates an empty head state. */
export function createHeadState(): HeadState {
  let head: KnownHead | undefined;
  const listings = new Map<string, Map<string, KnownEntry>>();
  const own = new Map<string, OwnWrite>();
  return {
    get head() {
      return head;
    },
    setHead(next, keepListings) {
      head = next;
      if (!keepListings) listings.clear();
    },
    invalidate() {
      head = undefined;
      listings.clear();
    },
    listing: (dir) => listings.get(dir),
    setListing(dir, entries) {
      listings.set(dir, new Map(entries));
    },
    fileAt(path) {
      const listing = listings.get(dirOf(path));
      if (!listing) return undefined;
      const entry = listing.get(nameOf(path));
      return entry ?? null;
    },
    applyChanges(changes) {
      for (const c of changes) {
        const dir = dirOf(c.path);
        const listing = listings.get(dir);
        if (listing) {
          if (c.sha === null) listing.delete(nameOf(c.path));
          else listing.set(nameOf(c.path), { sha: c.sha, type: 'file', size: c.size });
        }
        // A new file makes its directory appear in the parent's listing.
        if (c.sha !== null && dir !== '') {
          const parent = listings.get(dirOf(dir));
          if (parent && !parent.has(nameOf(dir))) parent.set(nameOf(dir), { sha: '', type: 'dir', size: 0 });
        }
      }
    },
    recordOwnWrites(commit, atMs, changes) {
      for (const c of changes) {
        own.delete(c.path); // re-insert so iteration order stays oldest-first
        own.set(c.path, { sha: c.sha, size: c.size, commit, atMs });
      }
      // Bounded memory: the oldest records go first.
      while (own.size > 10_000) own.delete(own.keys().next().value!);
    },
    forgetOwnWrites(paths) {
      for (const p of paths) own.delete(p);
    },
    ownWrites(sinceMs) {
      const out = new Map<string, OwnWrite>();
      for (const [path, w] of own) if (w.atMs >= sinceMs) out.set(path, w);
      return out;
    },
  };
}
