import type { Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertKey } from '../keys.js';
import type { CommitMessageContext, GitHubCommitIdentity } from './context.js';
import { storageSpill, type QueueSpill } from './emergency-queue.js';
import { defaultSpillRoot, fileSpill, type SpillIdentity } from './file-spill.js';
import type { GitHubStorageOptions } from './github-storage.js';

/** GitHub refuses files over 100 MB (phased-workflow-github.md "Individual files limited to 100MB"). */
export const GITHUB_MAX_FILE_BYTES = 100 * 1024 * 1024;

export const defaultMessage = (c: CommitMessageContext): string =>
  c.operation === 'init'
    ? 'savepoint: initialise checkpoint storage'
    : `savepoint: ${c.operation} ${c.keys[0] ?? ''}${c.keys.length > 1 ? ` (+${c.keys.length - 1} more)` : ''}`;

export function configError(message: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `githubStorage: ${message}`);
}

/** Numeric options: each must be a finite number at least its minimum (integers where counts). */
const NUMBER_OPTIONS: readonly (readonly [keyof GitHubStorageOptions, number, boolean])[] = [
  ['lowRateLimit', 0, true],
  ['contentRequestsPerHour', 1, true],
  ['lowContentRequests', 0, true],
  ['maxRateLimitWaitMs', 0, false],
  ['minWriteIntervalMs', 0, false],
  ['requestTimeoutMs', 1, false],
  ['maxConflictRetries', 0, true],
  ['maxRetries', 0, true],
  ['maxSecondaryRetries', 0, true],
  ['readYourWritesMs', 0, false],
  ['inlineMaxBytes', 0, true],
  ['maxWriteAttempts', 1, true],
  ['repeatFailureMs', 0, false],
];

/** Checks the options the factory does not check on its way (types, ranges, enums), so a typo fails at once with `checkpoint_config_invalid`. */
export function assertOptions(options: GitHubStorageOptions): void {
  for (const [name, min, integer] of NUMBER_OPTIONS) {
    const v = options[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
      throw configError(`${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}`);
    }
  }
  for (const name of ['fetch', 'commitMessage', 'onEvent'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw configError(`${name} must be a function`);
  }
  if (options.baseUrl !== undefined && (typeof options.baseUrl !== 'string' || !/^https?:\/\/[^\s/]+/.test(options.baseUrl)))
    throw configError('baseUrl must be an http(s) URL');
  if (options.branch !== undefined && typeof options.branch !== 'string') throw configError('branch must be a string');
  if (options.basePath !== undefined && typeof options.basePath !== 'string') throw configError('basePath must be a string');
  if (options.userAgent !== undefined && (typeof options.userAgent !== 'string' || /[\r\n]/.test(options.userAgent)))
    throw configError('userAgent must be a one-line string');
  if (options.verify !== undefined && options.verify !== 'read-back' && options.verify !== 'sha')
    throw configError("verify must be 'read-back' or 'sha'");
  if (options.serializeWrites !== undefined && options.serializeWrites !== 'branch' && options.serializeWrites !== 'adapter')
    throw configError("serializeWrites must be 'branch' or 'adapter'");
  if (options.mergeRunIndexes !== undefined && typeof options.mergeRunIndexes !== 'boolean')
    throw configError('mergeRunIndexes must be a boolean');
  const clock = options.clock as Partial<Clock> | undefined;
  if (
    clock !== undefined &&
    (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function')
  )
    throw configError('clock must have now, setTimeout and clearTimeout');
  const who = options.committer as Partial<GitHubCommitIdentity> | undefined;
  if (who !== undefined && (typeof who?.name !== 'string' || typeof who.email !== 'string' || who.name === '' || who.email === ''))
    throw configError('committer must be { name, email } with non-empty strings');
  if (options.maxValueBytes !== undefined && typeof options.maxValueBytes !== 'number') throw configError('maxValueBytes must be a number');
}

/** The repository, branch and folder the options name, checked: owner, repo, token, branch, then basePath. */
export function repositoryOf(options: GitHubStorageOptions): { branch: string; basePath: string } {
  if (typeof options.owner !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(options.owner))
    throw configError('owner must be a GitHub user or organization name');
  if (typeof options.repo !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(options.repo)) throw configError('repo must be a repository name');
  if (typeof options.token !== 'string' && typeof options.token !== 'function')
    throw configError('token is required (a string or a function returning one)');
  if (typeof options.token === 'string' && options.token.trim() === '') throw configError('token is empty');
  const branch = options.branch ?? 'main';
  if (branch === '' || branch.startsWith('/') || branch.endsWith('/') || /[\s~^:?*[\\]|\.\.|@\{/.test(branch))
    throw configError('branch is not a valid branch name');
  const basePath = (options.basePath ?? '').replace(/^\/+|\/+$/g, '');
  if (basePath !== '') {
    try {
      assertKey(basePath);
    } catch {
      throw configError('basePath must be a relative path without "." or ".." segments');
    }
  }
  return { branch, basePath };
}

/** Where the emergency queue keeps its writes (undefined: memory). */
export function spillOf(option: NonNullable<GitHubStorageOptions['emergencyQueue']>, identity: SpillIdentity): QueueSpill | undefined {
  if (option === false || option === 'memory') return undefined;
  if (option === true) {
    const root = defaultSpillRoot();
    return root === undefined ? undefined : fileSpill(root, identity);
  }
  if (typeof option === 'object' && option !== null && 'storage' in option && option.storage !== undefined) {
    const storage = option.storage;
    if (
      typeof storage.put !== 'function' ||
      typeof storage.get !== 'function' ||
      typeof storage.delete !== 'function' ||
      typeof storage.list !== 'function'
    ) {
      throw configError('emergencyQueue.storage must be a StorageAdapter');
    }
    const prefix = option.prefix ?? `savepoint-github-queue/${identity.owner}/${identity.repo}/${encodeURIComponent(identity.branch)}/`;
    if (typeof prefix !== 'string') throw configError('emergencyQueue.prefix must be a string');
    return storageSpill(storage, prefix);
  }
  if (typeof option === 'object' && option !== null && 'dir' in option && typeof option.dir === 'string' && option.dir !== '') {
    const spill = fileSpill(option.dir, identity);
    if (!spill)
      throw configError('emergencyQueue.dir needs a file system (Node >= 20.16); use emergencyQueue: { storage } or "memory" here');
    return spill;
  }
  throw configError("emergencyQueue must be true, false, 'memory', { dir } or { storage, prefix }");
}

/** The largest value accepted (`maxValueBytes`), checked against GitHub's own limit. */
export function maxValueBytesOf(options: GitHubStorageOptions): number {
  const maxValueBytes = options.maxValueBytes ?? GITHUB_MAX_FILE_BYTES;
  if (!(Number.isInteger(maxValueBytes) && maxValueBytes > 0 && maxValueBytes <= GITHUB_MAX_FILE_BYTES))
    throw configError(`maxValueBytes must be a positive integer up to ${GITHUB_MAX_FILE_BYTES}`);
  return maxValueBytes;
}
