import { formatDuration } from '../model/human-duration.js';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { toRfc3339, type Clock, type TimerHandle } from '../model/clock.js';
import { CheckpointError, isCheckpointError } from '../model/errors.js';
import type { BatchCheck, StorageAdapter } from '../storage/adapter.js';
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

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

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

/** Why a holder's lock may be taken over; `'dead'` means its claims can be reused. */
type Staleness = 'valid' | 'expired' | 'dead' | 'unreadable';

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
  const { storage, key, clock, leaseMs, identity } = options;
  let version: string | undefined;
  let leaseUntil = 0;
  let claimedThrough = 0;
  /** A rewrite failed without saying whether it landed: `version` may be stale. */
  let uncertain = false;
  let acquiredAt = toRfc3339(clock.now());
  // A store whose batch refuses `check` (an adapter still without it) is fenced by claims instead.
  let useCheck = options.atomic;
  let timer: TimerHandle | undefined;
  let released = false;
  /** Why the lease was lost, repeated to every later fenced write (until the lock is acquired again). */
  let lostError: CheckpointError | undefined;

  // Renewals, fenced writes and release run one at a time, so a renewal never changes the
  // version a write in flight is fenced with.
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(fn);
    chain = run.catch(() => undefined);
    return run;
  };

  const document = (): Uint8Array => {
    leaseUntil = clock.now() + leaseMs;
    const doc: RunLockDocument = {
      savepoint_lock: 1,
      run_id: options.runId,
      owner: options.owner,
      pid: identity.pid,
      hostname: identity.hostname,
      acquired_at: acquiredAt,
      lease_until: leaseUntil,
      ...(claimedThrough > 0 ? { claimed_through: claimedThrough } : {}),
    };
    return utf8Encode(canonicalJson(doc as never));
  };

  const sameHost = (holder: RunLockDocument): boolean => identity.hostname !== 'unknown' && holder.hostname === identity.hostname;

  /** What is known about a holder, for messages: who, where, and when its lease ends. Never a guess. */
  const describe = (holder: RunLockDocument): string => {
    const left = holder.lease_until - clock.now();
    const lease = left > 0 ? `lease ends in ${formatDuration(left)} (${toRfc3339(holder.lease_until)})` : `lease ended ${formatDuration(left)} ago`;
    const where = sameHost(holder) ? `on this host (${holder.hostname})${holder.pid !== identity.pid && options.isProcessAlive(holder.pid) ? ', process running' : ''}` : `on host ${holder.hostname}`;
    return `pid ${holder.pid} ${where}, ${lease}`;
  };

  const locked = (holder: RunLockDocument | undefined, what: string, hint = ''): CheckpointError =>
    new CheckpointError('checkpoint_run_locked', `run ${options.runId} ${what}${holder ? `: held by ${describe(holder)}` : ''}${hint}`, {
      details: {
        runId: options.runId,
        key,
        ...(holder
          ? { owner: holder.owner, hostname: holder.hostname, pid: holder.pid, leaseUntil: toRfc3339(holder.lease_until), leaseEndsInMs: Math.max(0, holder.lease_until - clock.now()) }
          : {}),
      },
    });

  const staleness = (holder: RunLockDocument | undefined): Staleness => {
    if (!holder) return 'unreadable'; // nobody can prove they hold it
    if (sameHost(holder)) {
      if (holder.pid === identity.pid ? !liveOwners.has(holder.owner) : !options.isProcessAlive(holder.pid)) return 'dead';
    }
    return clock.now() > holder.lease_until ? 'expired' : 'valid';
  };

  const stopTimer = (): void => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  };

  /** Marks the lease lost and builds the error saying who holds the run now. */
  const lost = (current: { bytes: Uint8Array } | undefined): CheckpointError => {
    version = undefined;
    stopTimer();
    liveOwners.delete(options.owner);
    const holder = current ? parseLock(current.bytes) : undefined;
    lostError = locked(holder, 'was taken over by another writer', "; this writer's checkpoints are refused from now on");
    return lostError;
  };
  const notHeld = (): CheckpointError => lostError ?? locked(undefined, 'is not held by this writer');

  /** Rewrites the lock (new lease, current claims), conditional on the version this writer holds. */
  const rewrite = async (): Promise<void> => {
    if (version === undefined) throw notHeld();
    const bytes = document();
    try {
      version = (await storage.put(key, bytes, { ifVersion: version })).version;
    } catch (err) {
      const conflict = isCheckpointError(err, 'checkpoint_conflict');
      // A write whose answer was lost may have landed all the same: the next fenced write must
      // check the version the store now holds, not the one before, or it can never pass.
      const current = await storage.get(key).catch(() => undefined);
      const ours = current !== undefined && parseLock(current.bytes)?.owner === options.owner;
      if (ours && (conflict || sameBytes(current.bytes, bytes))) {
        // An earlier rewrite (or this one) landed although it reported failure: the lock is still ours.
        version = current.version;
        uncertain = false;
        schedule();
        return;
      }
      if (!conflict) {
        // The outcome is unknown (and the store could not say): the next fenced write reads the
        // lock first instead of fencing with a version that may be gone.
        uncertain = true;
        throw err;
      }
      throw lost(current);
    }
    uncertain = false;
    schedule();
  };

  /** After a rewrite with an unknown outcome: adopts the version the store holds while the lock is still ours. */
  const resync = async (): Promise<void> => {
    const current = await storage.get(key);
    if (!current || parseLock(current.bytes)?.owner !== options.owner) throw lost(current);
    version = current.version;
    uncertain = false;
  };

  const confirm = async (): Promise<void> => {
    if (version === undefined) throw notHeld();
    const current = await storage.get(key);
    if (current?.version !== version) throw lost(current);
  };

  const renewEveryMs = Math.max(1, Math.floor(leaseMs / 3));
  function schedule(): void {
    stopTimer();
    if (version === undefined || released) return;
    timer = clock.setTimeout(
      () => {
        timer = undefined;
        void serial(async () => {
          if (version === undefined || released) return;
          try {
            await rewrite();
          } catch (raw) {
            const err = isCheckpointError(raw) ? raw : new CheckpointError('checkpoint_storage_unavailable', 'lease renewal failed', { cause: raw });
            options.onRenewalError?.(err);
            schedule(); // storage trouble: try again next period (a lost lease stops here: version is gone)
          }
        });
      },
      renewEveryMs,
      { background: true },
    );
  }

  const take = async (put: () => Promise<string>, tookOver: boolean, inheritedClaims: number): Promise<AcquireResult> => {
    version = await put();
    liveOwners.add(options.owner);
    schedule();
    return { tookOver, inheritedClaims };
  };

  const lock: RunLock = {
    get held() {
      return version !== undefined;
    },
    acquire() {
      return serial(async () => {
        released = false;
        lostError = undefined;
        acquiredAt = toRfc3339(clock.now());
        claimedThrough = 0;
        for (let round = 0; round < 3; round++) {
          try {
            return await take(async () => (await storage.put(key, document(), { ifAbsent: true })).version, false, 0);
          } catch (err) {
            if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
          }
          const current = await storage.get(key);
          if (!current) continue; // released meanwhile: try to create again
          const holder = parseLock(current.bytes);
          if (holder?.owner === options.owner) return await take(async () => current.version, false, 0);
          const stale = staleness(holder);
          if (stale === 'valid' && options.takeover !== 'force') {
            throw locked(holder, 'is locked by another writer', "; it is taken over when that lease ends without renewal, or at once with createWriter({ takeover: 'force' })");
          }
          // A holder whose process is gone wrote nothing after its claims; any other may still wake up and try.
          const claimed = holder?.claimed_through;
          const inherited = stale === 'dead' || typeof claimed !== 'number' || !Number.isSafeInteger(claimed) || claimed < 0 ? 0 : claimed;
          try {
            return await take(async () => (await storage.put(key, document(), { ifVersion: current.version })).version, true, inherited);
          } catch (err) {
            if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
            const now = await storage.get(key);
            throw locked(now ? parseLock(now.bytes) : undefined, 'was taken over by another writer first');
          }
        }
        throw locked(undefined, 'has a lock that keeps changing');
      });
    },
    fenced<T>(through: number, write: (fence: WriteFence) => Promise<T>): Promise<T> {
      return serial(async () => {
        for (;;) {
          const withCheck = useCheck;
          if (uncertain) await resync();
          if (withCheck) {
            if (clock.now() >= leaseUntil - leaseMs / 2) await rewrite(); // the timer is late (event loop stalled): renew now
          } else {
            // Claim the numbers first: a writer taking over after this point numbers after them.
            claimedThrough = Math.max(claimedThrough, through);
            await rewrite();
          }
          if (version === undefined) throw notHeld();
          const fence: WriteFence = withCheck ? { check: { type: 'check', key, ifVersion: version }, confirm } : { confirm };
          let result: T;
          try {
            result = await write(fence);
          } catch (err) {
            if (withCheck && isCheckpointError(err, 'checkpoint_unsupported')) {
              useCheck = false; // refused before anything was applied: fence by claims from now on
              continue;
            }
            await confirm(); // a lost lease explains the failure better than the storage error
            throw err;
          }
          if (!withCheck) await confirm(); // never acknowledge a write made after the lease was lost
          return result;
        }
      });
    },
    release() {
      released = true;
      stopTimer();
      return serial(async () => {
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
      });
    },
  };
  return lock;
}
