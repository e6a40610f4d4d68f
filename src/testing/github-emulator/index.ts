/**
 * A local GitHub REST API emulator for testing `githubStorage` (and anything else that
 * speaks the same endpoints) without the network. Node-only: it listens on 127.0.0.1.
 *
 * @packageDocumentation
 */
export {
  startGitHubEmulator,
  type GitHubEmulator,
  type GitHubEmulatorOptions,
  type EmulatorRequestRecord,
  type EmulatorRateLimit,
} from './server.js';
export type { EmulatorFault, EmulatorFaults, FaultRule, FaultHandle, FaultRequestInfo } from './faults.js';
export type { EmulatorState, EmulatorCommit } from './repo-state.js';
export {
  blobSha as gitBlobShaOf,
  treeSha as gitTreeShaOf,
  commitSha as gitCommitShaOf,
  createGitStore,
  GitTreeError,
  type GitStore,
  type GitObject,
  type GitTreeEntry,
  type GitCommitData,
  type GitSignature,
  type GitMode,
  type GitObjectType,
  type GitPathEntry,
  type GitTreeChange,
} from './git-store.js';
export {
  GITHUB_SCHEMA_SOURCE,
  validateRequestBody as validateGitHubRequestBody,
  validateResponseBody as validateGitHubResponseBody,
  type GitHubOperationId,
  type SchemaViolation,
} from './schemas.js';
