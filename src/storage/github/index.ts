/**
 * The GitHub storage adapter (`savepoint/github`). One file per concept: `http.ts`
 * (requests, rate-limit tracking, secret scrubbing via `secrets.ts`), `contents.ts`
 * (single-file operations), `commit-builder.ts` (atomic multi-file commits),
 * `conflicts.ts` (index merges), `listing.ts` (trees), `emergency-queue.ts`,
 * `write-lock.ts`, and the factory in `github-storage.ts`.
 */
export {
  githubStorage,
  GITHUB_MAX_FILE_BYTES,
  type GitHubStorage,
  type GitHubStorageOptions,
  type GitHubStorageStats,
  type PendingWrite,
} from './github-storage.js';
export type { GitHubStorageEvent, GitHubStorageEventListener } from './events.js';
export type { GitHubTokenSource } from './http.js';
export type { CommitMessageContext, GitHubCommitIdentity } from './context.js';
export { gitBlobSha } from './git-blob.js';
export { mergeRunIndexBytes } from './conflicts.js';
