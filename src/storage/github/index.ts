/**
 * The GitHub storage adapter (`savepoint/github`). One file per concept:
 * - the adapter: `github-storage.ts` (public types and the thin factory), `store-state.ts`
 *   (its state), `options.ts` (option checks), `reads.ts`, `list-keys.ts`, `write-methods.ts`
 *   and `write-path.ts` (direct, queued or held), `repeat-failures.ts`, `hold.ts`
 *   (`holdBelowFloor`), `pending.ts` (`isPending`, `pendingWrites`), `lifecycle.ts`
 *   (`flush`, `close`), `guard-errors.ts`;
 * - the emergency queue: `emergency-queue.ts`, `queue-codec.ts`, `queue-accept.ts`,
 *   `queue-push.ts`, `file-spill.ts`;
 * - requests: `http.ts` with `http-state.ts`, `http-send.ts`, `http-request.ts`
 *   (rate-limit tracking in `rate-limit.ts`, secret scrubbing in `secrets.ts`);
 * - single files: `contents.ts`, `put-file.ts`; atomic commits: `commit-builder.ts` over
 *   `commit-run.ts` (state), `commit-plan.ts` (pure planning) and `commit-attempts.ts`
 *   (the executor), with `commit-conditions.ts`, `commit-send.ts`, `commit-verify.ts`,
 *   `commit-unverified.ts`, `commit-reads.ts`, `init-repository.ts`, `restore.ts`;
 * - `conflicts.ts` (index merges), `listing.ts` (trees), `head-state.ts`, `write-lock.ts`.
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
