/**
 * `savepoint/progress-protocol` — progress-protocol.md's four-step, fail-forward checkpoint
 * protocol (progress file, git snapshot, tracker comment upsert, continuation prompt) and
 * the `progressProtocol` profile for its `.ccc-progress.md` file.
 *
 * Node-only: git runs through `node:child_process` `execFile` (never a shell), files
 * through `node:fs`.
 *
 * @module savepoint/progress-protocol
 */
export * from '../profiles/progress-protocol/index.js';
