import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { toRfc3339, type Clock } from '../model/clock.js';
import { CheckpointError, isCheckpointError } from '../model/errors.js';
import type { StorageAdapter } from '../storage/adapter.js';
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
}

/** A run lock held (or not) by one writer. */
export interface RunLock {
  /** Takes the lock, taking it over when its holder's lease expired or (same host) its process is dead. */
  acquire(): Promise<{ tookOver: boolean }>;
  /** Renews the lease when half of it is gone; `checkpoint_run_locked` if another writer took the run. */
  ensure(): Promise<void>;
  /** Deletes the lock if this writer still holds it. */
  release(): Promise<void>;
  readonly held: boolean;
}

/** Owner ids of writers alive in this process: a lock naming this pid but no live owner was left by a dead writer. */
const liveOwners = new Set<string>();

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

function parseLock(bytes: Uint8Array): RunLockDocument | undefined {
  try {
    const doc = parseJson(utf8Decode(bytes)) as Partial<RunLockDocument> | null;
    if (!doc || doc.savepoint_lock !== 1 || typeof doc.owner !== 'string' || typeof doc.lease_until !== 'number') return undefined;
    return doc as RunLockDocument;
  } catch {
    return undefined;
  }
}

/**
 * The two-writer rule: one writer per run. A writer takes `lockKey` create-only, holding
 * its owner id, pid, host name and a lease renewed by its writes. A second writer gets
 * `checkpoint_run_locked` — unless the lock is stale: its lease expired, or it names this
 * host and a process that is gone (a restarted process after SIGKILL continues at once), or
 * it names this very process but no live writer instance. Takeover is itself conditional
 * (`ifVersion`), so of two writers racing for a stale lock exactly one wins.
 *
 * The lock fences writes: before each group commit the writer renews the lease once half
 * of it has passed; a renewal that finds the lock changed means another writer took over,
 * and this writer stops with `checkpoint_run_locked` rather than write duplicate numbers.
 */
export function createRunLock(options: RunLockOptions): RunLock {
  const { storage, key, clock, leaseMs, identity } = options;
  let version: string | undefined;
  let leaseUntil = 0;

  const document = (acquiredAt: string): Uint8Array => {
    leaseUntil = clock.now() + leaseMs;
    const doc: RunLockDocument = {
      savepoint_lock: 1,
      run_id: options.runId,
      owner: options.owner,
      pid: identity.pid,
      hostname: identity.hostname,
      acquired_at: acquiredAt,
      lease_until: leaseUntil,
    };
    return utf8Encode(canonicalJson(doc as never));
  };
  let acquiredAt = toRfc3339(clock.now());

  const locked = (holder: RunLockDocument | undefined, why: string): CheckpointError =>
    new CheckpointError('checkpoint_run_locked', `run ${options.runId} is held by another writer (${why}); a second writer on one run is refused`, {
      details: {
        runId: options.runId,
        key,
        ...(holder ? { owner: holder.owner, hostname: holder.hostname, pid: holder.pid, leaseUntil: toRfc3339(holder.lease_until) } : {}),
      },
    });

  const stale = (holder: RunLockDocument | undefined): boolean => {
    if (!holder) return true; // unreadable lock: nobody can prove they hold it
    if (clock.now() > holder.lease_until) return true;
    if (identity.hostname === 'unknown' || holder.hostname !== identity.hostname) return false;
    if (holder.pid === identity.pid) return !liveOwners.has(holder.owner);
    return !options.isProcessAlive(holder.pid);
  };

  const lock: RunLock = {
    get held() {
      return version !== undefined;
    },
    async acquire() {
      acquiredAt = toRfc3339(clock.now());
      for (let round = 0; round < 3; round++) {
        try {
          version = (await storage.put(key, document(acquiredAt), { ifAbsent: true })).version;
          liveOwners.add(options.owner);
          return { tookOver: false };
        } catch (err) {
          if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
        }
        const current = await storage.get(key);
        if (!current) continue; // released meanwhile: try to create again
        const holder = parseLock(current.bytes);
        if (holder?.owner === options.owner) {
          version = current.version;
          liveOwners.add(options.owner);
          return { tookOver: false };
        }
        if (!stale(holder)) throw locked(holder, 'lease valid, holder alive');
        try {
          version = (await storage.put(key, document(acquiredAt), { ifVersion: current.version })).version;
          liveOwners.add(options.owner);
          return { tookOver: true };
        } catch (err) {
          if (isCheckpointError(err, 'checkpoint_conflict')) throw locked(undefined, 'another writer took it over first');
          throw err;
        }
      }
      throw locked(undefined, 'lock keeps changing');
    },
    async ensure() {
      if (version === undefined) throw locked(undefined, 'this writer does not hold the lock');
      if (clock.now() < leaseUntil - leaseMs / 2) return;
      try {
        version = (await storage.put(key, document(acquiredAt), { ifVersion: version })).version;
      } catch (err) {
        if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
        const current = await storage.get(key);
        const holder = current ? parseLock(current.bytes) : undefined;
        if (current && holder?.owner === options.owner) {
          // An earlier renewal landed although it reported failure: the lock is still ours.
          version = current.version;
          return;
        }
        version = undefined;
        liveOwners.delete(options.owner);
        throw locked(holder, 'lock was taken over');
      }
    },
    async release() {
      liveOwners.delete(options.owner);
      if (version === undefined) return;
      const v = version;
      version = undefined;
      try {
        await storage.delete(key, { ifVersion: v });
      } catch (err) {
        // Someone took over (conflict) — then it is theirs to keep.
        if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
      }
    },
  };
  return lock;
}
