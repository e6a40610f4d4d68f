import { blobSha, createGitStore, type GitCommitData, type GitPathEntry, type GitSignature, type GitStore } from './git-store.js';

/** A commit as {@link EmulatorState.log} shows it. */
export interface EmulatorCommit {
  readonly sha: string;
  readonly message: string;
  readonly parents: readonly string[];
  readonly tree: string;
}

/**
 * Direct access to the emulated repository, for tests and examples: read what is
 * stored (as git holds it), and write as "another process" would, without going
 * through HTTP (and without spending rate-limit budget).
 */
export interface EmulatorState {
  /** The object database (blob/tree/commit ids computed as git does). */
  readonly store: GitStore;
  /** The repository's default branch. */
  readonly defaultBranch: string;
  /** True while the repository has no commit. */
  readonly empty: boolean;
  /** The commit `branch` points at, or undefined. */
  head(branch?: string): string | undefined;
  /** The bytes at `path` on `ref` (a branch or commit sha), or undefined. */
  readFile(path: string, ref?: string): Uint8Array | undefined;
  /** Every file on `ref`, with its blob sha and size, in git order. */
  listFiles(ref?: string): { path: string; sha: string; size: number }[];
  /** First-parent history of `branch`, newest first. */
  log(branch?: string): EmulatorCommit[];
  /**
   * Commits `changes` (path → new content, or `null` to delete) on top of `branch`, as
   * another writer would; creates the branch in an empty repository. Returns the commit sha.
   */
  commitFiles(changes: Readonly<Record<string, Uint8Array | string | null>>, options?: { branch?: string; message?: string }): string;
}

/** @internal The mutable repository behind an emulator. */
export interface RepoState extends EmulatorState {
  /** The commit a branch-named read of `branch` resolves to, `commitsBack` first-parent steps behind its head. */
  staleHead(branch: string, commitsBack: number): string | undefined;
  /** A commit on `branch` with `tree` as its tree and the current head as parent; moves the branch. */
  commitTree(branch: string, tree: string, message: string, author?: GitSignature, committer?: GitSignature): string;
  /** The default signature for a commit made now. */
  signature(): GitSignature;
}

const text = new TextEncoder();

/** @internal */
export function createRepoState(options: {
  defaultBranch: string;
  now: () => number;
  userName: string;
  userEmail: string;
  initialFiles?: Readonly<Record<string, string>>;
}): RepoState {
  const store = createGitStore();
  const iso = (): string => new Date(Math.floor(options.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const signature = (): GitSignature => ({ name: options.userName, email: options.userEmail, date: iso() });

  const resolve = (ref: string | undefined): string | undefined => {
    const r = ref ?? options.defaultBranch;
    if (/^[0-9a-f]{40}$/.test(r) && store.get(r)?.type === 'commit') return r;
    return store.refs.get(r.replace(/^(refs\/)?heads\//, ''));
  };
  const treeOf = (commit: string): string => {
    const obj = store.get(commit);
    if (obj?.type !== 'commit') throw new Error(`${commit} is not a commit`);
    return obj.commit.tree;
  };

  const state: RepoState = {
    store,
    defaultBranch: options.defaultBranch,
    get empty() {
      return store.refs.size === 0;
    },
    head: (branch) => store.refs.get(branch ?? options.defaultBranch),
    readFile(path, ref) {
      const commit = resolve(ref);
      if (!commit) return undefined;
      const entry = store.entryAt(treeOf(commit), path);
      const obj = entry ? store.get(entry.sha) : undefined;
      return obj?.type === 'blob' ? new Uint8Array(obj.data) : undefined;
    },
    listFiles(ref) {
      const commit = resolve(ref);
      if (!commit) return [];
      return store
        .walk(treeOf(commit))
        .filter((e): e is GitPathEntry & { size: number } => e.type === 'blob' && e.size !== undefined)
        .map((e) => ({ path: e.path, sha: e.sha, size: e.size }));
    },
    log: (branch) => firstParentLog(store, store.refs.get(branch ?? options.defaultBranch)),
    commitFiles(changes, opts = {}) {
      const branch = opts.branch ?? options.defaultBranch;
      const head = store.refs.get(branch);
      const tree = store.applyChanges(
        head ? treeOf(head) : undefined,
        Object.entries(changes).map(([path, content]) => ({
          path,
          entry:
            content === null
              ? null
              : {
                  mode: '100644' as const,
                  type: 'blob' as const,
                  sha: store.putBlob(typeof content === 'string' ? text.encode(content) : content),
                },
        })),
      );
      return state.commitTree(branch, tree, opts.message ?? 'another writer');
    },
    staleHead: (branch, commitsBack) => firstParentBehind(store, store.refs.get(branch), commitsBack),
    commitTree(branch, tree, message, author, committer) {
      const head = store.refs.get(branch);
      const a = author ?? signature();
      const data: GitCommitData = { tree, parents: head ? [head] : [], author: a, committer: committer ?? a, message };
      const sha = store.putCommit(data);
      store.refs.set(branch, sha);
      return sha;
    },
    signature,
  };
  if (options.initialFiles && Object.keys(options.initialFiles).length > 0)
    state.commitFiles(options.initialFiles, { message: 'Initial commit' });
  return state;
}

/** The commits from `sha` back along first parents, newest first. */
function firstParentLog(store: GitStore, head: string | undefined): EmulatorCommit[] {
  const out: EmulatorCommit[] = [];
  let sha = head;
  while (sha) {
    const obj = store.get(sha);
    if (obj?.type !== 'commit') break;
    out.push({ sha, message: obj.commit.message, parents: obj.commit.parents, tree: obj.commit.tree });
    sha = obj.commit.parents[0];
  }
  return out;
}

/** The commit `commitsBack` first-parent steps behind `head` (or the oldest there is). */
function firstParentBehind(store: GitStore, head: string | undefined, commitsBack: number): string | undefined {
  let sha = head;
  for (let i = 0; i < commitsBack && sha; i++) {
    const obj = store.get(sha);
    const parent = obj?.type === 'commit' ? obj.commit.parents[0] : undefined;
    if (!parent) break;
    sha = parent;
  }
  return sha;
}

export { blobSha };
