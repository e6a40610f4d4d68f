import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * Every file fsStorage creates for itself (temp files, lock files, claims of locks) starts
 * with this mark. It contains a backslash, which no valid key may contain (see
 * `assertKey`), so an internal file can never collide with a key, and `list()` skips it
 * by the same rule that skips any name that is not a key.
 */
export const INTERNAL_MARK = '.sp\\';

/** Kinds of internal files. */
export type InternalKind = 'tmp' | 'lock' | 'dead' | 'claim';

/** Who created an internal file, and when (as the store's clock saw it). */
export interface Owner {
  /** First 8 hex digits of sha256(hostname): pids only mean something on the same host. */
  readonly host: string;
  readonly pid: number;
  readonly atMs: number;
  /** The whole tag, as written into names and lock targets. */
  readonly tag: string;
}

/** This machine's host tag. */
export const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);

/** A fresh owner tag for this process: `<host>-<pid>-<atMs base 36>-<random>`. */
// Unique per process by the counter, across processes by pid and the random prefix: a
// crypto random call per temp file cost more than the rest of the name.
const PROCESS_RANDOM = randomBytes(3).toString('hex');
let sequence = 0;

export function newOwner(atMs: number): Owner {
  sequence = (sequence + 1) % 0x1000000;
  const tag = `${HOST_TAG}-${process.pid}-${Math.max(0, Math.floor(atMs)).toString(36)}-${PROCESS_RANDOM}${sequence.toString(16).padStart(6, '0')}`;
  return { host: HOST_TAG, pid: process.pid, atMs, tag };
}

/** Parses an owner tag; `undefined` if it is not one. */
export function parseOwner(tag: string): Owner | undefined {
  const m = /^([0-9a-f]{8})-([1-9][0-9]{0,9})-([0-9a-z]{1,12})-([0-9a-f]{12})$/.exec(tag);
  if (!m) return undefined;
  return { host: m[1]!, pid: Number(m[2]), atMs: parseInt(m[3]!, 36), tag };
}

/** Name of a temp file (in the directory of the key it will become). */
export function tempName(owner: Owner): string {
  return `${INTERNAL_MARK}tmp-${owner.tag}`;
}

/** Name of a second link of a lock's token while it takes the lock over (../take-over.ts), or of a broken lock left by an earlier version. */
export function deadName(owner: Owner): string {
  return `${INTERNAL_MARK}dead-${owner.tag}`;
}

const utf8 = new TextEncoder();
/** Longest base name used verbatim in a lock name: the mark and kind must still fit in 255 bytes. */
const MAX_VERBATIM_LOCK_BASE = 200;

/**
 * Name of the lock file of the key whose last segment is `base` (in the same directory).
 * Readable when it fits; a long base name is hashed, in a separate `lockh-` namespace so the
 * two forms cannot collide.
 */
export function lockName(base: string): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short names need no encoding to be measured.
  if (base.length * 3 <= MAX_VERBATIM_LOCK_BASE || utf8.encode(base).length <= MAX_VERBATIM_LOCK_BASE)
    return `${INTERNAL_MARK}lock-${base}`;
  return `${INTERNAL_MARK}lockh-${createHash('sha256').update(base).digest('hex')}`;
}

const CLAIM_KIND = 'claim-';

/**
 * The start of the names of the claims of the lock at `lockPath` (take-over.ts): each claim is
 * this followed by the inode it claims (and `.<level>` past the first). A key's lock
 * (`.sp\lock-<base>`, `.sp\lockh-<hash>`) and the journal's (`.sp\lock-\journal`) have theirs
 * in a namespace of their own, `.sp\claim-<the lock's name>-`: a name made by appending to the
 * lock's could be another key's lock (`.sp\lock-k-breaking-7` is the lock of key `k-breaking-7`).
 * The inode and level hold no `-`, so the lock a claim belongs to is the name up to its last `-`.
 * Any other lock (the packed store's `.sp\packed\lock`, whose directory holds no key locks) has
 * `<lock>-breaking-`.
 */
export function claimPrefix(lockPath: string): string {
  const at = lockPath.lastIndexOf('/') + 1;
  const name = lockPath.slice(at);
  if (classifyInternal(name)?.kind !== 'lock') return `${lockPath}-breaking-`;
  return `${lockPath.slice(0, at)}${INTERNAL_MARK}${CLAIM_KIND}${name.slice(INTERNAL_MARK.length)}-`;
}

/** The kind and owner of an internal file name (owner for temp and dead files). */
export function classifyInternal(name: string): { kind: InternalKind; owner?: Owner } | undefined {
  if (!name.startsWith(INTERNAL_MARK)) return undefined;
  const rest = name.slice(INTERNAL_MARK.length);
  if (rest.startsWith('lock-') || rest.startsWith('lockh-')) return { kind: 'lock' };
  if (rest.startsWith(CLAIM_KIND)) return { kind: 'claim' };
  for (const kind of ['tmp', 'dead'] as const) {
    if (rest.startsWith(`${kind}-`)) {
      const owner = parseOwner(rest.slice(kind.length + 1));
      return owner ? { kind, owner } : { kind };
    }
  }
  return undefined;
}

/**
 * True when the process behind `owner` is known to be gone: it ran on this host and no
 * process has its pid any more. A process of another host (a shared mount) cannot be
 * checked, so it is never "gone" by this test — only by age.
 */
export function processGone(owner: Owner): boolean {
  if (owner.host !== HOST_TAG || owner.pid === process.pid) return false;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else — alive.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * True when the owner of a temp file can no longer be using it: its process is gone, or
 * the file is older than `staleAfterMs` (a hung writer, or a reused pid).
 */
export function ownerGone(owner: Owner, nowMs: number, staleAfterMs: number): boolean {
  return nowMs - owner.atMs > staleAfterMs || processGone(owner);
}
