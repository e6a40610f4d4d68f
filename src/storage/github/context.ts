import type { Clock } from '../../contract/clock.js';
import type { GitHubStorageEventListener } from './events.js';
import type { HeadState } from './head-state.js';
import type { GitHubHttp } from './http.js';

/** The name and email GitHub records for commits, when not the token's user. */
export interface GitHubCommitIdentity {
  readonly name: string;
  readonly email: string;
}

/** What one write is, for its commit message. */
export interface CommitMessageContext {
  /** `put`, `delete`, `batch`, or `init` (the first commit of an empty repository). */
  readonly operation: 'put' | 'delete' | 'batch' | 'init';
  /** The storage keys written, in order. */
  readonly keys: readonly string[];
}

/** @internal Everything the operation modules share. */
export interface RepoContext {
  readonly http: GitHubHttp;
  readonly clock: Clock;
  readonly emit: GitHubStorageEventListener;
  readonly state: HeadState;
  readonly branch: string;
  /** `/repos/<owner>/<repo>`, percent-encoded. */
  readonly repoPath: string;
  /** Repository path of a storage key (`basePath/key`). */
  toPath(key: string): string;
  /** Storage key of a repository path, or undefined when it is outside `basePath`. */
  toKey(path: string): string | undefined;
  readonly message: (context: CommitMessageContext) => string;
  readonly committer: GitHubCommitIdentity | undefined;
  readonly verify: 'read-back' | 'sha';
  readonly mergeRunIndexes: boolean;
  /** Largest file sent inline in a tree or through the contents API. */
  readonly inlineMaxBytes: number;
  /** Least time between content-generating requests (for back-off sizing). */
  readonly minWriteIntervalMs: number;
  /** Rebuilds of a write that lost a race before giving up. */
  readonly maxConflictRetries: number;
  /** Write requests (ref updates, contents PUTs) one write may send, whatever made the previous one fail. */
  readonly maxWriteAttempts: number;
  /** Points paths back at earlier blobs (or removes them) in one commit; resolves whether it landed. */
  readonly restore: (paths: readonly { path: string; sha: string | null; left?: string | null }[]) => Promise<boolean>;
}

/** Percent-encodes each segment of a repository path for a URL. */
export function encodeRepoPath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/** The directory part of a repository path (`''` for the root). */
export function dirOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i === -1 ? '' : path.slice(0, i);
}

/** The last segment of a repository path. */
export function nameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
