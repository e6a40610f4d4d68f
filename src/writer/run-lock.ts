import { parseJson } from '../codec/canonical-json.js';
import { utf8Decode } from '../codec/utf8.js';
import type { Clock } from '../contract/clock.js';
import type { CheckpointError } from '../contract/errors.js';
import type { BatchCheck, StorageAdapter } from '../contract/storage.js';
import { acquireLock, fencedWrite, releaseLock } from './run-lock-ops.js';
import { createRunLockState } from './run-lock-state.js';
import type { WriterLockIdentity } from './types.js';

/** The stored lock document (`layout.lockKey(runId)`, e.g. `checkpoints/<run>/.savepoint-lock.json`). */
export interface RunLockDocument {
  readonly savepoint_lock: 1;
  readonly run_id: string;
  /** Random id of the writer instance holding the run. */
  readonly owner: string;
  readonly pid: number;
  readonly hostname: string;
  readonly acquired_at: string;
  /** Epoch ms after which another writer may take the run over. */
  readonly lease_until: number;
  /**
   * Highest sequence the holder may be writing (stores without a fenced atomic batch claim
   * their numbers here before writing them). A writer taking over starts after it, unless
   * the holder's process is known to be dead.
   */
  readonly claimed_through?: number;
}

/** Options of {@link createRunLock}. */
export interface RunLockOptions {
  readonly storage: StorageAdapter;
  readonly key: string;
  readonly runId: string;
  readonly owner: string;
  readonly identity: WriterLockIdentity;
  readonly leaseMs: number;
  readonly clock: Clock;
  readonly isProcessAlive: (pid: number) => boolean;
  /** `'force'`: take the run over even from a holder whose lease is still running. */
  readonly takeover: 'stale' | 'force';
  /** Fence writes with a `check` batch operation (the adapter has an atomic batch). */
  readonly atomic: boolean;
  /** Called when a background renewal finds the run taken over, or cannot renew. */
  readonly onRenewalError?: (error: CheckpointError) => void;
}

/** What {@link RunLock.acquire} learned. */
export interface AcquireResult {
  readonly tookOver: boolean;
  /**
   * The lock was created: no writer held the run (the last one released it at close, or there
   * was none). False when it was taken from a holder, which may have crashed with work unfinished.
   */
  readonly created: boolean;
  /**
   * Highest sequence the previous holder may still write (its `claimed_through`), 0 when
   * there was none or its process is known to be dead. The new holder numbers after it.
   */
  readonly inheritedClaims: number;
}

/** Handed to a fenced write: what makes storage refuse it once the lease is lost. */
export interface WriteFence {
  /** A batch condition on the lock's version (adapters with an atomic batch); absent when the write is fenced by claims. */
  readonly check?: BatchCheck;
  /** Throws `checkpoint_run_locked` unless the lock still holds this writer's version. */
  confirm(): Promise<void>;
}

/** A run lock held (or not) by one writer. */
export interface RunLock {
  /** Takes the lock: create-only, or over a stale holder (lease ended, process dead) or any holder with `takeover: 'force'`. */
  acquire(): Promise<AcquireResult>;
  /**
   * Runs one group write under the lease: renewals wait for it, and it can only land while
   * the lock holds this writer's version. `through` is the highest sequence the write uses.
   * Resolves with `write`'s result only when the write was fenced; a lost lease rejects
   * with `checkpoint_run_locked` whatever `write` did.
   */
  fenced<T>(through: number, write: (fence: WriteFence) => Promise<T>): Promise<T>;
  /** Stops renewing and deletes the lock if this writer still holds it. */
  release(): Promise<void>;
  readonly held: boolean;
}

function identityDefault(): WriterLockIdentity {
  const proc = (globalThis as { process?: { pid?: number; getBuiltinModule?: (id: string) => unknown } }).process;
  let hostname = 'unknown';
  try {
    // getBuiltinModule keeps this file free of `node:` imports, so the core still runs in browsers.
    const os = proc?.getBuiltinModule?.('os') as { hostname?: () => string } | undefined;
    hostname = os?.hostname?.() ?? 'unknown';
  } catch {
    // not Node: keep 'unknown' (lease expiry is then the only takeover rule)
  }
  return { pid: typeof proc?.pid === 'number' ? proc.pid : 0, hostname };
}

/** Default identity: the current process id and host name where the runtime has them. */
export const defaultLockIdentity: () => WriterLockIdentity = identityDefault;

/** Default liveness probe: `process.kill(pid, 0)`; without it every process counts as alive. */
export function defaultIsProcessAlive(pid: number): boolean {
  const proc = (globalThis as { process?: { kill?: (pid: number, signal: number) => boolean } }).process;
  if (!proc?.kill || !(pid > 0)) return true;
  try {
    proc.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

/** The lock document in `bytes`, or undefined when they are not one (what the writer and `savepoint unlock` accept). */
export function parseLock(bytes: Uint8Array): RunLockDocument | undefined {
  try {
    const doc = parseJson(utf8Decode(bytes)) as Partial<RunLockDocument> | null;
    if (!doc || doc.savepoint_lock !== 1 || typeof doc.owner !== 'string' || typeof doc.lease_until !== 'number') return undefined;
    return doc as RunLockDocument;
  } catch {
    return undefined;
  }
}

/**
 * The two-writer rule with a lease that fits containers. A writer takes `lockKey`
 * create-only, holding its owner id, pid, host name and a short lease, and renews the lease
 * on a background timer (a third of the lease) that never keeps the process alive. A
 * second writer gets `checkpoint_run_locked` with what is known about the holder — unless
 * the lease ended without renewal (a dead or paused holder), the lock names this host and a
 * process that is gone, or the second writer asks for `takeover: 'force'`. Takeover and
 * renewal are conditional on the lock's version, so of two racing writers exactly one wins.
 *
 * Every write is fenced by that version (DESIGN invariant 7): with an atomic batch the
 * write carries a `check` of the lock's version, so it lands whole or not at all; without
 * one, the writer first claims its sequence numbers in the lock document (conditionally),
 * and confirms the version before `latest` and before acknowledging. A taker-over numbers
 * after the claims, so a paused holder that wakes up can never reuse a number, and never
 * sees its write acknowledged.
 */
export function createRunLock(options: RunLockOptions): RunLock {
  const state = createRunLockState(options);
  return {
    get held() {
      return state.version !== undefined;
    },
    acquire: () => acquireLock(state),
    fenced: <T>(through: number, write: (fence: WriteFence) => Promise<T>): Promise<T> => fencedWrite(state, through, write),
    release: () => releaseLock(state),
  };
}
