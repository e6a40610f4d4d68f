import { constants, type BigIntStats } from 'node:fs';
import fsp from 'node:fs/promises';
import crypto, { createHash, randomInt } from 'node:crypto';
import { CheckpointError } from '../../model/errors.js';
import type { BatchOperation, BatchOutcome } from '../adapter.js';
import { openDir, type Dir, type OpenedDir, type RootDir, type WalkMode } from './dir.js';
import type { FsIo } from './fd.js';
import { errnoOf, nextMtimeSeconds, versionOf } from './io.js';
import { acquireLock, lstatIfAny, releaseLock, type HeldLock, type LockTiming } from './lock.js';
import { INTERNAL_MARK, newOwner, tempName, type Owner } from './names.js';
import { keyPath, keyRefused, occupiedRefused, symlinkRefused } from './paths.js';
import { backgroundLane, type Lane } from './lane.js';
import { createTempPool, futimesNs, type PooledTemp } from './temp-pool.js';

/*
 * The write-ahead journal (issue 15, item 3): a batch's writes become one record written
 * to `<root>/.sp\journal` and fdatasynced once — the commit point, after which the batch is
 * acknowledged — and are then applied to the spec's files in the background, by rename of
 * whole files (so a reader that is not savepoint sees an old or a new file, never a torn
 * one). The applied files are not fsynced one by one: the journal is the truth until a
 * checkpoint has fsynced them and emptied it. Opening the store (and taking the journal
 * lock from a holder that died) replays it: every key the journal names is brought to its
 * last journaled state — files that already hold it are not touched, so their versions
 * stay — then checkpointed.
 *
 * Acknowledged before applied: until its files are renamed into place, this process's
 * reads answer from the acknowledged records it holds in memory (`pending`); a holder lets
 * the journal lock go only once everything it committed is applied, so records not yet
 * applied exist only while their writer holds the lock — and another instance's reads, while
 * the lock is held by someone else, read the journal's records (`view`) before the files.
 * A put's version (`<mtime ns>.<inode>.<size>`) is known at the commit point: its inode is
 * that of a temp file made ahead (temp-pool.ts), its mtime one chosen now and set with
 * futimes when the file is applied, and the record carries it for other processes.
 *
 * One journal per store directory, shared by every process: a lock file (the same
 * link-a-temp-file lock as keys' locks, see lock.ts) serializes commits, so conditions
 * (`ifAbsent`, `ifVersion`, checks) are evaluated under it against what keys hold — the
 * records acknowledged and not yet applied first, then the files — and hold between
 * processes. Within a process, batches that arrive while a commit is under way are
 * committed together in the next record (group commit): one write, one fdatasync; and
 * applies that fall behind are merged, so a key replaced by several records meanwhile is
 * renamed once, to its last state.
 *
 * Record: "SPJ2" | u32 body length | u32 epoch | first 8 bytes of sha256(epoch | body) | body,
 * where body is u32 JSON length | JSON [["p", key, length, version] | ["d", key], …] | the
 * puts' bytes in order (records of earlier versions have no put version). A record whose
 * length or hash does not match (a torn write) ends the journal, and so does one of another
 * epoch.
 *
 * Why it costs one fdatasync (issue 15): the journal file is preallocated with written
 * zeros, and records are written in place (pwrite at the end of the last one), so the
 * commit's fdatasync has no file size or block allocation to make durable — measured on
 * ext4, half the cost of an fsync of an O_APPEND file that grows. A checkpoint empties a
 * journal file by zeroing the first record's header; the next record starts at offset 0
 * under a new epoch, so the old records behind it can never be read as part of it.
 *
 * Two files, `.sp\journal` and `.sp\journal-2` (issue 15, third round): when the one
 * commits go to is full, commits switch to the other and the full one is checkpointed in
 * the background — its groups applied, the files it names fsynced, then emptied — so the
 * checkpoint's fsyncs (one per file written: the largest cost of eight concurrent runs) no
 * longer hold commits up. The file switched to gets the epoch after the full one's: when
 * both hold records (a crash before the checkpoint ended), the one whose epoch follows the
 * other's is the newer, and recovery and other instances' reads take both in that order.
 */

const { O_RDWR, O_CREAT, O_NOFOLLOW, O_WRONLY, O_EXCL, O_RDONLY, O_NONBLOCK } = constants;
/**
 * The journal is written with O_DSYNC where the platform has it: a record's write returns
 * once it is durable, as write + fdatasync would, in one trip through the thread pool
 * instead of two. Elsewhere the write is followed by an fdatasync.
 */
const O_DSYNC: number | undefined = constants.O_DSYNC;
export const JOURNAL_NAME = `${INTERNAL_MARK}journal`;
/**
 * The journal's two files (issue 15): commits go to one while the other — full — is
 * checkpointed in the background, so a checkpoint's fsyncs no longer hold commits up.
 */
export const JOURNAL_NAMES = [JOURNAL_NAME, `${INTERNAL_MARK}journal-2`] as const;
/** Which of the two journal files. */
type FileNo = 0 | 1;
// The backslash makes it a name no key's lock can have (keys hold none).
const JOURNAL_LOCK = `${INTERNAL_MARK}lock-\\journal`;
const MAGIC = 0x53504a32; // "SPJ2"
const HEADER = 20;
/** Largest preallocation: past it, a big `journalCheckpointBytes` grows the file as records come. */
const MAX_PREALLOC = 64 << 20;
const newEpoch = (): number => randomInt(1, 0xffffffff);
/** Applied files' descriptors kept open for the journal checkpoint's fsync, at most, by every journaled store of the process together (see `kept`). */
const MAX_KEPT = 256;
let keptInProcess = 0;
/** How many descriptors the process keeps now (tests: none once every store is closed). */
export const keptDescriptors = (): number => keptInProcess;
/** The epoch of the file commits go to after a switch: the one after the full file's, so replay knows their order. */
export const nextEpoch = (epoch: number): number => (epoch >= 0xffffffff ? 1 : epoch + 1);
/**
 * The order to replay the two files in, from their records' epochs (undefined: no record):
 * the file whose epoch follows the other's is the newer one. Only one file with records, or
 * none: that one first. Two unrelated epochs cannot both hold records (a file is emptied
 * before commits switch to it); the first file is taken as the older then.
 */
export function replayOrder(epochs: readonly [number | undefined, number | undefined]): [FileNo, FileNo] {
  const [a, b] = epochs;
  if (a !== undefined && b !== undefined) return nextEpoch(b) === a ? [1, 0] : [0, 1];
  return a === undefined && b !== undefined ? [1, 0] : [0, 1];
}
const otherFile = (file: FileNo): FileNo => (file === 0 ? 1 : 0);
/** The keys a decoded journal file names. */
const keysOf = (found: DecodedJournal): Set<string> => new Set(found.records.flatMap((r) => r.ops.map((o) => o.key)));
/** Both files' epochs, undefined for a file without records. */
const epochsOf = (found: readonly [DecodedJournal, DecodedJournal]): [number | undefined, number | undefined] => [
  found[0].records.length > 0 ? found[0].epoch : undefined,
  found[1].records.length > 0 ? found[1].epoch : undefined,
];

/** A put (key, length of its bytes, and — since apply-after-acknowledge — its version) or a delete. */
export type JournalOp = readonly ['p', string, number] | readonly ['p', string, number, string] | readonly ['d', string];

/** What a journal needs from its store. */
export interface JournalDeps {
  readonly root: RootDir;
  readonly timing: LockTiming;
  readonly fileMode: number;
  readonly io: FsIo;
  /** Checkpoint (fsync applied files, empty the journal) once it grows past this. */
  readonly checkpointBytes: number;
  /** How long the journal lock is kept after a commit (test seam; 20 ms). */
  readonly lingerMs?: number;
  /** How long applies wait for a pause in the commits (default 3 ms; 0: apply at once). */
  readonly applyQuietMs?: number;
  /** At most how long after a group's commit its apply starts while commits keep coming (default 40 ms). */
  readonly applyLagMs?: number;
}

/** What recovery found. */
export interface RecoveryReport {
  /** Whole records found in the journal. */
  readonly records: number;
  /** Keys whose files did not hold their last journaled state and were rewritten or removed. */
  readonly repaired: number;
  /** Keys left as they were because their path is no longer the store's to write (a symlink or a directory in the way). */
  readonly refused: number;
  /** Bytes of a torn last record, discarded. */
  readonly discardedBytes: number;
}

export interface Journal {
  /** Commits `ops` atomically (all or none), sharing the record with concurrent batches of this process; resolves at the commit point. */
  commit(ops: readonly BatchOperation[]): Promise<BatchOutcome[]>;
  /**
   * The keys (starting with `prefix`) whose acknowledged state may not be in their files
   * yet — this process's records not yet applied, or, while another instance holds the
   * journal lock, the journal's records — each with its last journaled state. Every other
   * key's file is up to date.
   */
  unapplied(prefix: string): Promise<ReadonlyMap<string, AckedState>>;
  /** Waits until everything acknowledged so far is applied to the files (replaying what failed). */
  flush(): Promise<void>;
  /** Replays and checkpoints the journal under its lock (on open). */
  recover(): Promise<RecoveryReport>;
  /** Waits for pending commits, checkpoints, closes the journal file. */
  close(): Promise<void>;
}

function conflict(key: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });
}

/** A record's seal: the first 8 bytes of sha256 over its epoch field and its body. */
function seal(epochField: Uint8Array, body: Uint8Array): Buffer {
  const hash = createHash('sha256');
  hash.update(epochField);
  hash.update(body);
  return hash.digest().subarray(0, 8);
}

/** crypto.hash (Node ≥ 20.12): a one-shot digest without a Hash object. */
const oneShot: ((algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer) | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/**
 * Seals the record `out` in place (see {@link seal}). On the commit path (issue 15) a Hash
 * object cost ~35 µs after an idle moment, a one-shot digest ~13 µs: the epoch field is
 * copied into the seal's last four bytes, right before the body, so that epoch | body is
 * one contiguous range to digest; the seal then overwrites it.
 */
function sealInPlace(out: Buffer): void {
  if (!oneShot) {
    out.set(seal(out.subarray(8, 12), out.subarray(HEADER)), 12);
    return;
  }
  out.copyWithin(HEADER - 4, 8, 12);
  out.set(oneShot('sha256', out.subarray(HEADER - 4), 'buffer').subarray(0, 8), 12);
}

/** Encodes one record of journal epoch `epoch` (a nonzero u32). */
export function encodeRecord(ops: readonly JournalOp[], payloads: readonly Uint8Array[], epoch = 1): Uint8Array {
  // The JSON text is encoded straight into the record (no intermediate buffer).
  const json = JSON.stringify(ops);
  const jsonLength = Buffer.byteLength(json, 'utf8');
  let bodyLength = 4 + jsonLength;
  for (const p of payloads) bodyLength += p.length;
  const out = Buffer.allocUnsafe(HEADER + bodyLength);
  out.writeUInt32BE(MAGIC, 0);
  out.writeUInt32BE(bodyLength, 4);
  out.writeUInt32BE(epoch, 8);
  out.writeUInt32BE(jsonLength, HEADER);
  out.write(json, HEADER + 4, 'utf8');
  let at = HEADER + 4 + jsonLength;
  for (const p of payloads) {
    out.set(p, at);
    at += p.length;
  }
  sealInPlace(out);
  return out;
}

/** One decoded record: its operations with their bytes. */
export interface DecodedRecord {
  readonly ops: readonly ({ readonly type: 'put'; readonly key: string; readonly bytes: Uint8Array; readonly version?: string } | { readonly type: 'delete'; readonly key: string })[];
}

/** What {@link decodeJournal} found. */
export interface DecodedJournal {
  readonly records: DecodedRecord[];
  /** Where the last whole record ends (where the next one goes). */
  readonly end: number;
  /** The records' epoch (undefined when there is none). */
  readonly epoch?: number;
  /** Bytes of a torn record of the same epoch right after `end` (0 when the journal just ends there). */
  readonly torn: number;
  /** Where the last whole record starts (0 when there is none). */
  readonly lastStart: number;
  /** When the record after `end` goes past the bytes given: how many bytes from the start would hold it. */
  readonly wants?: number;
}

/** Decodes the whole records of one epoch (the first record's, or `expectEpoch`) at the start of `bytes`. */
export function decodeJournal(bytes: Uint8Array, expectEpoch?: number): DecodedJournal {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: DecodedRecord[] = [];
  let at = 0;
  let lastStart = 0;
  let epoch: number | undefined = expectEpoch;
  const sameEpoch = (pos: number): boolean => epoch === undefined || buf.readUInt32BE(pos + 8) === epoch;
  while (at + HEADER <= buf.length) {
    if (buf.readUInt32BE(at) !== MAGIC || !sameEpoch(at)) break;
    const length = buf.readUInt32BE(at + 4);
    if (length < 4 || at + HEADER + length > buf.length) break;
    const body = buf.subarray(at + HEADER, at + HEADER + length);
    if (!seal(buf.subarray(at + 8, at + 12), body).equals(buf.subarray(at + 12, at + HEADER))) break;
    try {
      const jsonLength = body.readUInt32BE(0);
      const ops = JSON.parse(body.subarray(4, 4 + jsonLength).toString('utf8')) as JournalOp[];
      let p = 4 + jsonLength;
      const decoded: DecodedRecord['ops'][number][] = [];
      for (const op of ops) {
        if (op[0] === 'p') {
          const version = op[3];
          decoded.push({ type: 'put', key: op[1], bytes: new Uint8Array(body.subarray(p, p + op[2])), ...(typeof version === 'string' ? { version } : {}) });
          p += op[2];
        } else decoded.push({ type: 'delete', key: op[1] });
      }
      records.push({ ops: decoded });
    } catch {
      break;
    }
    epoch ??= buf.readUInt32BE(at + 8);
    lastStart = at;
    at += HEADER + length;
  }
  let torn = 0;
  let wants: number | undefined;
  if (at + HEADER <= buf.length && buf.readUInt32BE(at) === MAGIC && sameEpoch(at)) {
    const whole = HEADER + buf.readUInt32BE(at + 4);
    torn = Math.min(whole, buf.length - at);
    if (whole > buf.length - at) wants = at + whole;
  }
  return { records, end: at, ...(epoch === undefined ? {} : { epoch }), torn, lastStart, ...(wants === undefined ? {} : { wants }) };
}

/** What a key holds while a group is prepared: the file on disk, or what an earlier batch of the group will leave. */
interface KeyState {
  readonly exists: boolean;
  readonly version?: string;
  readonly mtimeNs?: bigint;
}

/**
 * An operation whose condition held, planned under the lock: a put has its (empty) temp
 * file and its mtime chosen, so its version is known before anything is written.
 */
interface Planned {
  readonly op: BatchOperation;
  /** The key's directory; for a put into one that is missing, opened once its apply made it (makeDir). */
  od?: OpenedDir;
  /** An operation on a key whose directory was missing when planned: the hold's directories through which its apply opens it (a put's makes it). */
  readonly dirs?: DirCache;
  readonly temp?: PooledTemp;
  /** The mtime the put's file gets (seconds, as futimes takes them). */
  readonly mtimeSeconds?: number;
  /** What the key held before this operation (a put that creates is applied first). */
  readonly before: KeyState;
  /** What the key holds after it (puts and deletes); for a put on a file system whose timestamps do not read back exactly, set once applied. */
  after?: KeyState;
  outcome: BatchOutcome;
  /** Whether the planned mtime reads back exactly (else the version is the applied file's own). */
  readonly exact: boolean;
  /** Set once its temp file's descriptor is closing. */
  closed?: boolean;
  /** Set once its temp file was renamed into place or given back (nothing left to remove), or handed to a later put of its key (`taken`). */
  landed?: boolean;
  /** Set when an apply has taken it (its decisions are made): its temp file is no longer free to be handed on. */
  claimed?: boolean;
  /**
   * A put acknowledged and not applied yet whose temp file a later put of the same key took
   * over (see {@link takeOver}): never applied itself, the later put's apply replaces it.
   */
  taken?: boolean;
  /** The put whose temp file this one took over (given back to it if this one is not committed). */
  readonly from?: Planned;
}

/** The directories a group opened, shared by its operations (a checkpoint's keys share their run's directory). */
interface DirCache {
  readonly byKey: Map<string, Promise<OpenedDir | undefined>>;
  /** Every walk made, to close at the end of the group. */
  readonly all: Promise<OpenedDir | undefined>[];
  /**
   * Names in each directory, listed once under the hold (absent: not used). A key not
   * known in `states` and not listed has no file: a new history file's `ifAbsent` costs no
   * stat. Files written since are all in `states` (or `pending`), which are asked first.
   */
  readonly names?: Map<string, Promise<Set<string>>>;
  /** The walks that found their directory, by directory key: what a batch planned at once uses (see planNow). */
  readonly ready: Map<string, OpenedDir>;
  /** The listings that completed, by directory (see `names`). */
  readonly listed: Map<string, Set<string>>;
  /**
   * Directories found missing under this hold (a walk, or a parent missing or made by
   * this hold): a put into one is planned without making it (issue 17: no mkdir on the
   * commit path); its apply makes it (makeDir). Nobody else makes them meanwhile.
   */
  readonly missing: Set<string>;
  /** Directories a planned put's apply will make: a put of a file at such a path is refused now, as it would be once made. */
  readonly toMake: Set<string>;
  /** Directories this hold's applies made (a mkdir that succeeded): every entry in them is this hold's, so a subdirectory not walked yet is missing. */
  readonly made: Set<string>;
}
/** An acknowledged key state not yet in its file: the bytes (null: deleted) and version. */
export interface AckedState {
  readonly bytes: Uint8Array | null;
  /** Absent for a put journaled by an older savepoint (no version in its record): read the file. */
  readonly version?: string;
}

interface Pending {
  readonly ops: readonly BatchOperation[];
  resolve(outcomes: BatchOutcome[]): void;
  reject(err: unknown): void;
}

export function createJournal(deps: JournalDeps): Journal {
  const { root, timing, io } = deps;
  const preallocBytes = Math.min(MAX_PREALLOC, Math.ceil((deps.checkpointBytes + 65536) / 4096) * 4096);
  /** The two journal files' descriptors, once opened. */
  const fds: [Promise<number> | undefined, Promise<number> | undefined] = [undefined, undefined];
  let needRecovery = false;
  const queue: Pending[] = [];
  let running: Promise<void> | undefined;
  // Two of the thread pool's four threads at most for background work (with every other journaled store of the process): a commit's write finds one free.
  const lane = backgroundLane();
  // Refills go ahead of applies in the lane: a commit that finds the pool empty makes its temp file on its own path (measured under 8 runs: 47 % of takes before, 29 % after).
  const pool = createTempPool(root, io, timing, deps.fileMode, lane.first);
  /** This process's acknowledged operations whose files are not applied yet: the last one of each key. */
  const pending = new Map<string, Planned>();
  /** Committed groups waiting to be applied, in commit order; a directory cache to close once the groups before it are applied. */
  const toApply: ApplyItem[] = [];
  let applying: Promise<void> | undefined;
  /** Whether futimes times read back exactly (probed once): then versions are known at the commit point. */
  let exactTimes: Promise<boolean> | undefined;
  /** The probe's answer once it is in (no await on the commit path after that). */
  let exactNow: boolean | undefined;
  /**
   * Kept descriptors (issue 15): the file each key holds now, as this hold of the lock
   * applied it — its temp file's descriptor, left open after the rename — so the journal
   * checkpoint fsyncs it without an open and a close (two of a history file's nine trips
   * through the thread pool). Only while nothing else can have replaced the file: across a
   * release of the journal lock only if the next hold finds the journal as this process
   * left it (no one else committed: see keptVerified), never across a replay (it may rewrite
   * files), and this process's own later put or delete of the key closes the older one. At
   * most MAX_KEPT; past that a file is closed as before and fsynced by path.
   */
  const kept = new Map<string, number>();
  /**
   * Whether this hold may use descriptors kept from an earlier one: set once placeRecord has
   * found the journal as the earlier hold left it — every other journaled writer commits
   * through it, so none replaced a file in between. Until then a checkpoint drops them.
   */
  let keptVerified = true;

  /** The journal files' descriptors once open (a commit writes without awaiting `fds`). */
  const opened: [number | undefined, number | undefined] = [undefined, undefined];
  /** A journal file's descriptor, the file preallocated. */
  function journalFd(file: FileNo = 0): Promise<number> {
    const opening = (fds[file] ??= openJournalFile(file));
    opening.then(
      (jfd) => {
        if (fds[file] === opening) opened[file] = jfd;
      },
      () => {
        if (fds[file] === opening) fds[file] = undefined;
      },
    );
    return opening;
  }
  async function openJournalFile(file: FileNo): Promise<number> {
    const jfd = await io.open(root.at(JOURNAL_NAMES[file]), O_RDWR | O_CREAT | O_NOFOLLOW | (O_DSYNC ?? 0), deps.fileMode);
    try {
      const size = Number((await io.fstat(jfd)).size);
      if (size < preallocBytes) {
        // Written zeros, not a hole or fallocate(): blocks that are allocated and written
        // leave a commit's fdatasync nothing but the record's own data to flush.
        await io.writeAt(jfd, new Uint8Array(preallocBytes - size), size);
        await io.fsync(jfd);
      }
      // The journal's own directory entry must survive a power loss before any record counts.
      await io.fsync(root.fd);
    } catch (err) {
      await io.close(jfd).catch(() => undefined);
      throw err;
    }
    return jfd;
  }

  /*
   * The journal lock lingers: taking and releasing it costs eight file-system calls — four
   * times a commit's own two — and letting it go waits for the files to be applied, so a
   * holder keeps it for LINGER_MS after a commit (a run's next checkpoint, or a graph's next
   * superstep, usually comes sooner: at 2 ms the lock was let go and taken again between
   * most checkpoints of a run whose steps do some work) and at most MAX_HOLD_MS in all, well
   * inside the stale bound. Other processes wait for it as for any lock: a hand-over
   * between processes costs them up to LINGER_MS.
   */
  const LINGER_MS = deps.lingerMs ?? 20;
  const MAX_HOLD_MS = Math.min(1000, timing.staleAfterMs / 4);
  /*
   * Applies wait for a lull in the commits (issue 15 / 17): an apply's file creations,
   * writes and renames running beside a commit's O_DSYNC write slowed that write two- to
   * threefold (the device flushes what they dirtied with it) — a LangGraph thread's chain
   * of puts, each waiting for the one before, paid it at every superstep. So the groups
   * committed wait until no commit has come for APPLY_QUIET_MS, and at most APPLY_LAG_MS
   * after the first of them was committed (how old the files a reader that is not savepoint
   * sees can be while commits keep coming); waiting merges more groups too (a run's
   * latest.json landed once per more checkpoints). `flush()`, letting the lock go and a
   * commit that waits for its files apply at once. Measured in docs/performance.md.
   */
  const APPLY_QUIET_MS = deps.applyQuietMs ?? 3;
  const APPLY_LAG_MS = deps.applyLagMs ?? 40;
  /** The temp file our lock is a link of, kept between holds while young (one link(2) takes the lock). */
  interface Token {
    readonly path: string;
    readonly fd: number;
    readonly ino: bigint;
    readonly owner: Owner;
  }
  let spare: Token | undefined;
  /** Where the journal ended and its epoch when we last let the lock go (checked, not trusted, on the next hold). */
  let lastSeen: { readonly active: FileNo; readonly end: number; readonly epoch: number; readonly keys: Set<string> } | undefined;
  /** A full journal file being checkpointed in the background while commits go to the other. */
  interface Retiring {
    readonly file: FileNo;
    readonly keys: ReadonlySet<string>;
    /** Settles once its files are fsynced and it is emptied; never rejects (a failure sets needRecovery: the next commit replays both files). */
    readonly done: Promise<void>;
  }
  interface Held {
    readonly lock: HeldLock;
    readonly token: Token;
    readonly since: number;
    /** The journal file commits go to (with `end`, once known). */
    active?: FileNo;
    /** The other file, while its checkpoint runs. */
    retiring?: Retiring;
    /** Where the next record goes while we hold the lock (nobody else writes it), once known. */
    end?: number;
    /** The epoch of the journal's records, once known. */
    epoch?: number;
    /** The keys the journal's records name, known with `end`: a checkpoint fsyncs them without reading the journal back. */
    keys?: Set<string>;
    /**
     * What keys hold (or will hold once the group in hand is applied), learned while the
     * lock is held: no other journaled writer changes them meanwhile, so a condition is
     * checked without a stat. Dropped after any failure.
     */
    states?: Map<string, KeyState>;
    /**
     * Directories opened while the lock is held, reused by the next groups: no other
     * journaled writer changes them meanwhile. One our own deletes pruned (emptied, removed)
     * makes a later rename into it fail with ENOENT, and the file lands through a fresh walk
     * that makes the directory again; a stat through it finds nothing, which is right for
     * every key not known (in `states`) to have been written since.
     */
    dirs?: DirCache;
    /** Set after a failure (what was known is dropped): directory listings are not trusted for the rest of the hold. */
    unlisted?: boolean;
  }
  let held: Held | undefined;
  let busy = false;
  let linger: ReturnType<typeof setTimeout> | undefined;

  async function newToken(): Promise<Token> {
    const owner = newOwner(timing.clock.now());
    const path = root.at(tempName(owner));
    const tfd = await io.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, deps.fileMode);
    try {
      return { path, fd: tfd, ino: (await io.fstat(tfd)).ino, owner };
    } catch (err) {
      await dropToken({ path, fd: tfd });
      throw err;
    }
  }
  async function dropToken(t: { readonly path: string; readonly fd: number }): Promise<void> {
    await Promise.all([io.close(t.fd).catch(() => undefined), io.unlink(t.path).catch(() => undefined)]);
  }
  /**
   * A kept token stays well inside the stale bound: others judge a lock by its token's age
   * (and sweep temp files older than the bound), and a hold lasts at most MAX_HOLD_MS more.
   */
  const young = (t: Token): boolean => timing.clock.now() - t.owner.atMs <= timing.staleAfterMs / 4;

  async function take(): Promise<Held> {
    for (let attempt = 0; ; attempt++) {
      let token = spare;
      spare = undefined;
      if (token && !young(token)) {
        await dropToken(token);
        token = undefined;
      }
      const reused = token !== undefined;
      token ??= await newToken();
      try {
        const lock = await acquireLock(root.at(JOURNAL_LOCK), root.prefix, 'journal', token, timing);
        lockOurs = true;
        // Descriptors kept from an earlier hold are trusted once the journal is found as it was left (placeRecord).
        keptVerified = false;
        return { lock, token, since: Date.now() };
      } catch (err) {
        await dropToken(token);
        // A kept token someone removed (a sweep): take the lock with a fresh one.
        if (reused && attempt === 0 && errnoOf(err) === 'ENOENT') continue;
        throw err;
      }
    }
  }

  // A release under way (the linger timer's): names through the root's descriptor are still in use.
  let releasing: Promise<void> | undefined;
  /**
   * Whether the journal lock is ours: from its taking until its release renames it away.
   * Not `held || releasing`: once renamed away (the release's first call) another instance
   * may take the lock and commit before the release is over, and reads must see that.
   */
  let lockOurs = false;
  /**
   * Releases the lock; the token is kept for the next hold unless `keepToken` is false
   * (nothing more to commit soon). `unlessBusy` (the linger timer's): the hold goes on if a
   * commit comes while the files are being applied — the wait for them is the release's
   * longest part, and a commit meanwhile would otherwise wait for it all, then take the lock
   * again (issue 17: a LangGraph thread's first checkpoint waited for the previous thread's
   * files).
   */
  async function letGo(keepToken = true, unlessBusy = false): Promise<void> {
    // One release at a time: one that kept the hold is followed by this one.
    if (releasing) await releasing.catch(() => undefined);
    const h = held;
    if (!h) return;
    const done = (async () => {
      // Everything this hold committed is in the files before the lock goes: records not yet
      // applied exist only while their writer holds the lock (other instances' reads rely on
      // it). And the next holder finds one journal file with records at most. A commit may
      // come while either is awaited (a background checkpoint's fsyncs take long): its apply,
      // and the checkpoint it may start, are awaited too (regression: the lock went with a
      // commit's files unapplied, and another instance read the files it replaced).
      for (;;) {
        await drain();
        await settleRetiring(h);
        // Decided and let go in the same turn: a commit that comes later waits for the release.
        if (held !== h || (unlessBusy && (busy || running !== undefined))) return;
        if (applying === undefined && !h.retiring) break;
      }
      held = undefined;
      lastSeen = undefined;
      if (needRecovery) await recoverLocked().catch(() => undefined);
      else if (h.active !== undefined && h.end !== undefined && h.epoch !== undefined && h.keys) lastSeen = { active: h.active, end: h.end, epoch: h.epoch, keys: h.keys };
      if (h.dirs) await closeDirs(h.dirs);
      // Once the lock is gone another process may replace any file: the descriptors stay only
      // if the next hold finds the journal as this one leaves it (nobody committed meanwhile).
      if (!lastSeen) dropKept();
      lockOurs = false;
      await releaseLock(h.lock, timing);
      if (keepToken && spare === undefined && young(h.token)) spare = h.token;
      else await dropToken(h.token);
    })();
    releasing = done;
    try {
      await done;
    } finally {
      if (releasing === done) releasing = undefined;
    }
  }

  /** Runs `fn` holding the journal lock (a temp file of ours in the root, linked as the lock). */
  async function locked<T>(fn: (lock: HeldLock, h: Held) => Promise<T>, keep = true): Promise<T> {
    if (linger) clearTimeout(linger);
    linger = undefined;
    busy = true;
    try {
      if (held && Date.now() - held.since > MAX_HOLD_MS) await letGo();
      if (!held) await releasing?.catch(() => undefined);
      const fresh = !held;
      held ??= await take();
      return await fn(fresh ? held.lock : { ...held.lock, brokeStale: false }, held);
    } catch (err) {
      // After a failure nothing is assumed about the journal: the next commit starts afresh.
      await letGo().catch(() => undefined);
      throw err;
    } finally {
      busy = false;
      if (!keep) await letGo(false);
      else if (held) {
        linger = setTimeout(() => {
          linger = undefined;
          if (!busy) void letGo(true, true).catch(() => undefined);
        }, LINGER_MS);
        linger.unref?.();
      }
    }
  }

  /** The file at a key now: absent, or a regular file (anything else is refused). */
  async function stateOf(od: OpenedDir | undefined, key: string): Promise<KeyState & { st?: BigIntStats }> {
    if (!od) return { exists: false };
    const st = await lstatIfAny(od.dir.at(keyPath(key).base));
    if (!st) return { exists: false };
    if (st.isSymbolicLink()) throw symlinkRefused(key);
    if (!st.isFile()) throw occupiedRefused(key);
    return { exists: true, version: versionOf(st), mtimeNs: st.mtimeNs, st };
  }

  interface Temp {
    readonly path: string;
    readonly fd: number;
    readonly version: string;
    readonly mtimeNs: bigint;
  }

  /** Writes a put's bytes to a temp file in its directory. */
  async function writeTemp(od: OpenedDir, bytes: Uint8Array): Promise<Temp> {
    const path = od.dir.at(tempName(newOwner(timing.clock.now())));
    const tfd = await io.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, deps.fileMode);
    try {
      await io.write(tfd, bytes);
      const st = await io.fstat(tfd);
      return { path, fd: tfd, version: versionOf(st), mtimeNs: st.mtimeNs };
    } catch (err) {
      await dropTemp({ path, fd: tfd });
      throw err;
    }
  }

  async function dropTemp(temp: { readonly path: string; readonly fd: number }): Promise<void> {
    await Promise.all([io.close(temp.fd).catch(() => undefined), io.unlink(temp.path).catch(() => undefined)]);
  }

  /**
   * Moves the temp file's mtime past the previous file's when the clock did not (coarse
   * timestamps), so the key's version changes. The version is then final: rename keeps
   * inode, mtime and size.
   */
  async function settleMtime(temp: Temp, previous: KeyState): Promise<Temp> {
    if (previous.mtimeNs === undefined || temp.mtimeNs > previous.mtimeNs) return temp;
    try {
      await io.futimes(temp.fd, nextMtimeSeconds({ mtimeNs: previous.mtimeNs } as BigIntStats));
      const st = await io.fstat(temp.fd);
      return { ...temp, version: versionOf(st), mtimeNs: st.mtimeNs };
    } catch (err) {
      await dropTemp(temp);
      throw err;
    }
  }

  /** A point in the apply queue, reached once every group committed before it is applied (or failed to be). */
  interface ApplyMark {
    readonly reached: () => void;
  }
  /** What the apply queue holds: a committed group, a directory cache to close, a mark. */
  type ApplyItem = Planned[] | DirCache | ApplyMark;
  const newDirCache = (listed: boolean): DirCache => ({
    byKey: new Map(),
    all: [],
    ready: new Map(),
    listed: new Map(),
    missing: new Set(),
    toMake: new Set(),
    made: new Set(),
    ...(listed ? { names: new Map() } : {}),
  });
  const parentOf = (dirKey: string): string | undefined => {
    const cut = dirKey.lastIndexOf('/');
    return cut > 0 ? dirKey.slice(0, cut) : undefined;
  };
  /** Whether this hold wrote (or acknowledged) a file at `path`. */
  const fileAt = (path: string): boolean => learned(held?.states, path)?.exists === true;
  const parentIsFile = (key: string): CheckpointError => keyRefused(key, 'a parent path is a file (another key)', 'path_occupied');
  /**
   * Whether directory `dirKey` is known to be absent without a call — found missing under
   * this hold, or its parent is (or was made by this hold, and it was never walked) — and
   * remembered as missing unless a file this hold wrote is there: a put planned into it
   * (`'probe'`) is refused then, as a walk that made it would be.
   */
  function knownMissing(cache: DirCache, dirKey: string, key: string, mode: WalkMode): boolean {
    const parent = parentOf(dirKey);
    const missing = cache.missing.has(dirKey) || (parent !== undefined && (cache.missing.has(parent) || (cache.made.has(parent) && !cache.byKey.has(dirKey))));
    if (!missing) return false;
    if (fileAt(dirKey)) {
      if (mode === 'probe') throw parentIsFile(key);
      return true;
    }
    cache.missing.add(dirKey);
    return true;
  }
  /**
   * A key's directory, opened once per hold through `cache`. `mode` as openDir's: `'probe'`
   * (a put being planned) resolves undefined for a missing directory — the put's apply makes
   * it (makeDir) — and refuses a symlink or a file in the way now, as a walk that made it
   * would; `'make'` (at apply) makes the missing components known missing with a mkdir first.
   */
  async function dirOf(cache: DirCache, dirKey: string, key: string, mode: WalkMode): Promise<OpenedDir | undefined> {
    const ready = cache.ready.get(dirKey);
    if (ready) return ready;
    // A walk under way (or one that failed) is awaited; a directory known missing is decided
    // at once, so that the puts an apply makes it for share one walk.
    const cached = cache.byKey.get(dirKey);
    if (cached && !cache.missing.has(dirKey)) {
      const od = await cached.catch(() => undefined);
      if (od) return od;
    }
    if (mode !== 'make' && mode !== true && knownMissing(cache, dirKey, key, mode)) return undefined;
    // Made with a mkdir first when known missing; no longer missing once its making starts (later walks await it).
    const making: WalkMode = mode === 'make' && !cache.missing.delete(dirKey) ? true : mode;
    // Not opened yet, or found missing (or refused) before: walk again, it may exist now —
    // from its parent, opened (once) through the same cache: the many new directories of one
    // parent (a LangGraph thread's `parts/<sequence>/`, one per superstep, often planned
    // together) then cost one open each, not a walk each from the root.
    const parentKey = parentOf(dirKey);
    const opening = (parentKey !== undefined ? dirOf(cache, parentKey, key, mode) : Promise.resolve(undefined)).then(async (parent) => {
      // Its parent missing (a probe's), or not a directory (a plain walk's): no directory here either.
      if (parentKey !== undefined && !parent) return mode === 'probe' ? missingNow(cache, dirKey, key) : undefined;
      const od = await walkRetrying(dirKey, key, making, parent?.chain, mode === 'make' ? laneIo : io);
      if (!od && mode === 'probe') return missingNow(cache, dirKey, key);
      if (od && mode === 'make' && od.chain.length >= 2 && od.changed.includes(od.chain[od.chain.length - 2]!)) madeDir(cache, dirKey);
      return od;
    });
    cache.byKey.set(dirKey, opening);
    cache.all.push(opening);
    opening.then(
      (od) => od && cache.ready.set(dirKey, od),
      () => undefined,
    );
    return opening;
  }
  /** A probe found `dirKey` missing: remembered (refused if this hold wrote a file there). */
  function missingNow(cache: DirCache, dirKey: string, key: string): undefined {
    if (fileAt(dirKey)) throw parentIsFile(key);
    cache.missing.add(dirKey);
    return undefined;
  }
  /** A directory this hold made: empty then, so its listing is known (every file written since is in `states`). */
  function madeDir(cache: DirCache, dirKey: string): void {
    cache.made.add(dirKey);
    if (cache.names && !cache.names.has(dirKey)) {
      const names = new Set<string>();
      cache.names.set(dirKey, Promise.resolve(names));
      cache.listed.set(dirKey, names);
    }
  }
  /** The background lane's calls: the directories a put's apply makes (makeDir) wait their turn as its other calls. */
  const laneIo: FsIo = { ...io, open: (path, flags, mode) => lane(() => io.open(path, flags, mode)), mkdir: (path) => lane(() => io.mkdir(path)), close: (fd) => lane(() => io.close(fd)) };
  /**
   * A walk that makes missing directories starts over — from the root — when one it is in is
   * pruned under it (ENOENT from mkdir: an emptied directory removed by a delete being applied).
   */
  async function walkRetrying(dirKey: string, key: string, create: WalkMode, from?: readonly Dir[], through: FsIo = io): Promise<OpenedDir | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await openDir(root, dirKey, key, create, through, attempt === 0 ? from : undefined);
      } catch (err) {
        if (!(create === true || create === 'make') || attempt >= 8 || errnoOf(err) !== 'ENOENT') throw err;
      }
    }
  }
  async function closeDirs(cache: DirCache): Promise<void> {
    const all = await Promise.allSettled(cache.all);
    await Promise.all(all.map((r) => (r.status === 'fulfilled' ? r.value?.close() : undefined)));
  }

  /** The names in a key's directory, listed once per cache. */
  function namesIn(cache: DirCache, names: Map<string, Promise<Set<string>>>, od: OpenedDir): Promise<Set<string>> {
    const rel = od.dir.rel;
    let listed = names.get(rel);
    if (!listed) {
      listed = fsp.readdir(od.dir.prefix).then((entries) => {
        const set = new Set(entries);
        cache.listed.set(rel, set);
        return set;
      });
      names.set(rel, listed);
    }
    return listed;
  }

  /** What the key holds as learned under this hold (`states`), or acknowledged and not yet applied; else undefined. */
  function learned(states: Map<string, KeyState> | undefined, key: string): KeyState | undefined {
    return states?.get(key) ?? pending.get(key)?.after;
  }
  /** Remembers under this hold that `key` holds nothing, and says so. */
  function absentNow(states: Map<string, KeyState>, key: string): KeyState {
    const absent: KeyState = { exists: false };
    states.set(key, absent);
    return absent;
  }

  /** What the key holds when it is known without a call (learned under this hold, acknowledged, or absent from its directory's completed listing); else undefined. */
  function stateNow(states: Map<string, KeyState>, od: OpenedDir, key: string, base: string, cache: DirCache): KeyState | undefined {
    const known = learned(states, key);
    if (known || !cache.names) return known;
    const names = cache.listed.get(od.dir.rel);
    return !names || names.has(base) ? undefined : absentNow(states, key);
  }

  /** What a key in a directory known missing holds: what this hold wrote, else nothing. */
  function stateMissing(states: Map<string, KeyState>, key: string): KeyState {
    return learned(states, key) ?? absentNow(states, key);
  }

  /** What the key holds: learned earlier under this hold (or acknowledged and not yet applied), absent from its directory's listing, or stat'ed now (and remembered). */
  async function knownState(states: Map<string, KeyState>, od: OpenedDir | undefined, key: string, cache: DirCache): Promise<KeyState> {
    const known = learned(states, key);
    if (known) return known;
    if (od && cache.names) {
      // Listed once per directory (a failed listing leaves it unlisted: the key is stat'ed below).
      await namesIn(cache, cache.names, od).catch(() => undefined);
      const now = stateNow(states, od, key, keyPath(key).base, cache);
      if (now) return now;
    }
    const { exists, version, mtimeNs } = await stateOf(od, key);
    const state: KeyState = exists ? { exists, version: version!, mtimeNs: mtimeNs! } : { exists };
    // A batch names each key once and batches are prepared one after another: no race on the entry.
    states.set(key, state);
    return state;
  }

  /** One operation whose condition held: what the key held before it. */
  interface Checked {
    readonly op: BatchOperation;
    readonly od?: OpenedDir;
    readonly before: KeyState;
    /** Its directory was missing: the cache through which its apply opens it (a put's makes it). */
    readonly dirs?: DirCache;
  }

  /** Checks one operation's condition against what the key holds (no file is written). */
  async function checkOne(op: BatchOperation, states: Map<string, KeyState>, cache: DirCache): Promise<Checked> {
    const kp = keyPath(op.key);
    const od = await dirOf(cache, kp.dirKey, op.key, op.type === 'put' ? 'probe' : false);
    return checked(op, od, await knownState(states, od, op.key, cache), cache);
  }

  /** An operation's condition held against `before` (what the key holds), or its refusal. */
  function checked(op: BatchOperation, od: OpenedDir | undefined, before: KeyState, cache: DirCache): Checked {
    // A directory this hold made, or will make for a put already planned, is in the way of a file.
    if (op.type === 'put' && (cache.toMake.has(op.key) || cache.made.has(op.key))) throw occupiedRefused(op.key);
    const cond = op as { ifAbsent?: boolean; ifVersion?: string };
    if (cond.ifAbsent && before.exists) throw conflict(op.key, 'key exists');
    if (cond.ifVersion !== undefined && (!before.exists || before.version !== cond.ifVersion)) throw conflict(op.key, before.exists ? 'version changed' : 'key is gone');
    return { op, ...(od ? { od } : { dirs: cache }), before };
  }

  /**
   * Plans a checked operation: a put gets an empty temp file made ahead (its inode) and the
   * mtime its file will have, past the previous one's — so its version is known now, before
   * any byte is written.
   */
  async function plan(c: Checked, exact: boolean): Promise<Planned> {
    if (c.op.type !== 'put') return planWith(c, exact, undefined);
    const from = takeOver(c.op.key, exact);
    return from ? planWith(c, exact, from.temp, from) : planWith(c, exact, await pool.take());
  }

  /**
   * Takes over the temp file of the acknowledged put of `key` not yet taken by an apply and
   * returns that put (undefined when there is none; issue 15): that put would never reach
   * the disk — the apply merges it away — so its temp file serves the new one instead of a
   * new inode from the pool. A
   * run's latest.json and index are replaced by every checkpoint: under 8 busy runs two of a
   * checkpoint's three temp files came from the pool only to go back to it when applied,
   * and the pool ran empty (a temp file made on the commit's path) for ~40 % of the puts.
   * Only while versions are known at the commit point (`exact`), and only a young temp file
   * (an old one may be swept as a crashed writer's).
   */
  function takeOver(key: string, exact: boolean): Planned | undefined {
    const prev = pending.get(key);
    if (!exact || prev?.op.type !== 'put' || !prev.temp || prev.landed || prev.claimed || !pool.young(prev.temp)) return undefined;
    prev.taken = true;
    prev.landed = true;
    return prev;
  }
  /**
   * A put that took over an earlier put's temp file and is not committed (refused, or its
   * record failed): the temp file goes back to that put — unless an apply has taken it
   * meanwhile and so skipped it, when its file must come from the journal (a replay) and
   * the temp file is removed.
   */
  function giveBackInherited(p: Planned): void {
    const prev = p.from!;
    if (!prev.claimed) {
      prev.taken = false;
      prev.landed = false;
      return;
    }
    needRecovery = true;
    void Promise.all([io.close(p.temp!.fd).catch(() => undefined), io.unlink(p.temp!.path).catch(() => undefined)]);
  }
  /** {@link plan} with the put's temp file in hand (`from`: the put it was taken over from). */
  function planWith(c: Checked, exact: boolean, temp: PooledTemp | undefined, from?: Planned): Planned {
    const { op, od, before, dirs } = c;
    const entry = od ? { od } : dirs ? { dirs } : {};
    if (dirs && op.type === 'put') toMake(dirs, keyPath(op.key).dirKey);
    if (op.type === 'put') {
      if (!temp) throw new Error('a put is planned with its temp file');
      const mtimeSeconds = nextMtimeSeconds(before.mtimeNs === undefined ? undefined : ({ mtimeNs: before.mtimeNs } as BigIntStats));
      const mtimeNs = futimesNs(mtimeSeconds);
      const version = `${mtimeNs}.${temp.ino}.${op.bytes.length}`;
      const after: KeyState = { exists: true, version, mtimeNs };
      return { op, ...entry, temp, mtimeSeconds, before, after, outcome: { type: 'put', key: op.key, version }, exact, ...(from ? { from } : {}) };
    }
    if (op.type === 'delete') return { op, ...entry, before, after: { exists: false }, outcome: { type: 'delete', key: op.key, existed: before.exists }, exact };
    return { op, ...entry, before, outcome: { type: 'check', key: op.key }, exact };
  }

  /** Remembers that an apply will make `dirKey` and its missing parents. */
  function toMake(cache: DirCache, dirKey: string | undefined): void {
    for (let d = dirKey; d !== undefined && cache.missing.has(d) && !cache.toMake.has(d); d = parentOf(d)) cache.toMake.add(d);
  }

  /** Checks a batch's conditions and plans it; rejects with the first refusal (nothing planned stays). */
  async function planBatch(ops: readonly BatchOperation[], states: Map<string, KeyState>, cache: DirCache, exact: boolean): Promise<Planned[]> {
    const checked = await Promise.allSettled(ops.map((op) => checkOne(op, states, cache)));
    const refused = checked.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (refused) throw refused.reason;
    const planned = await Promise.allSettled(checked.map((r) => plan((r as PromiseFulfilledResult<Checked>).value, exact)));
    const done = planned.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = planned.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      giveBack(done);
      throw failed.reason;
    }
    // Later batches of the group (and of this hold) check against what this one leaves.
    for (const p of done) if (p.after) states.set(p.op.key, p.after);
    return done;
  }

  /**
   * Plans a batch at once, without a call or an await, when everything it needs is in hand
   * (issue 15: a busy run's commit path): each key's directory walked and its state known
   * under this hold, a young temp file in the pool for each put. Undefined when something
   * must be fetched first (planBatch plans it then); throws the first refusal as planBatch does.
   */
  function planNow(ops: readonly BatchOperation[], states: Map<string, KeyState>, cache: DirCache, exact: boolean): Planned[] | undefined {
    const found: Checked[] = [];
    for (const op of ops) {
      const kp = keyPath(op.key);
      const od = cache.ready.get(kp.dirKey);
      // A directory known missing holds only what this hold wrote into it (acknowledged, not yet applied).
      const before = od ? stateNow(states, od, op.key, kp.base, cache) : knownMissing(cache, kp.dirKey, op.key, op.type === 'put' ? 'probe' : false) ? stateMissing(states, op.key) : undefined;
      if (!before) return undefined;
      // Every condition before any temp file is taken: a refusal leaves the pool as it was.
      found.push(checked(op, od, before, cache));
    }
    const done: Planned[] = [];
    for (const c of found) {
      const from = c.op.type === 'put' ? takeOver(c.op.key, exact) : undefined;
      const temp = from ? from.temp : c.op.type === 'put' ? pool.takeReady() : undefined;
      if (c.op.type === 'put' && !temp) {
        giveBack(done);
        return undefined;
      }
      done.push(planWith(c, exact, temp, from));
    }
    for (const p of done) if (p.after) states.set(p.op.key, p.after);
    return done;
  }

  /**
   * Returns planned temp files that were never written to the pool. `committed`: the puts
   * are in the journal and an apply merged them away (a later operation of the key won):
   * each one's temp file is its own then, even one it took over from an earlier put, and
   * goes back to the pool as any other. Not committed, a taken-over temp file goes back to
   * the put it came from (giveBackInherited).
   */
  function giveBack(planned: readonly Planned[], committed = false): void {
    for (const p of planned) {
      if (p.temp && !p.landed) {
        p.landed = true;
        if (p.from && !committed) giveBackInherited(p);
        else pool.giveBack(p.temp);
      }
    }
  }

  /** What this hold learned about keys and directories is dropped (after a failure, or a delete that may prune directories). */
  function forget(h: Held): void {
    h.states = undefined;
    h.unlisted = true;
    retireDirs(h);
  }
  /** New groups walk afresh; the cache closes once the groups already using it are applied. */
  function retireDirs(h: Held): void {
    if (!h.dirs) return;
    scheduleApply(h.dirs);
    h.dirs = undefined;
  }

  /** Queues a committed group's application to the files (or a cache to close after the groups before it). */
  function scheduleApply(item: ApplyItem): void {
    toApply.push(item);
    applying ??= runApplies();
  }

  /**
   * Applies committed groups in commit order. Groups that queued up while one was applied are
   * applied together, each key to its last state only. A failure leaves the keys in
   * `pending` (reads still answer the acknowledged state) and the journal to replay: before
   * the next commit, `flush()`, or letting the lock go.
   */
  async function runApplies(): Promise<void> {
    // Starts on the next turn of the event loop (after `applying` is set): the callers a commit
    // just answered resume before the apply's work, which would otherwise run ahead of them
    // in the microtask queue (issue 15: the commit's answer without extra hops).
    await new Promise<void>((r) => setImmediate(r));
    await lull();
    while (toApply.length > 0) {
      const head = toApply[0]!;
      if (!Array.isArray(head)) {
        toApply.shift();
        if ('reached' in head) head.reached();
        else await closeDirs(head);
        continue;
      }
      const cacheAt = toApply.findIndex((x) => !Array.isArray(x));
      const groups = toApply.splice(0, cacheAt === -1 ? toApply.length : cacheAt) as Planned[][];
      const planned = groups.flat();
      // From here on their temp files are the apply's: a later put no longer takes one over (takeOver).
      for (const p of planned) p.claimed = true;
      try {
        await applyMerged(planned);
      } catch {
        needRecovery = true;
        await discard(planned);
      }
    }
    applying = undefined;
  }
  /** Resolves once every group committed so far has been applied (or has failed to), applying them at once. */
  async function drain(): Promise<void> {
    hurrying++;
    try {
      hurry?.();
      while (applying) await applying;
    } finally {
      hurrying--;
    }
  }

  /** When the last commit's record was written (performance.now()). */
  let lastCommitAt = 0;
  /** Callers waiting for the applies to be done (drain): no lull then. */
  let hurrying = 0;
  /** Ends the lull under way at once. */
  let hurry: (() => void) | undefined;
  /** Waits until no commit has come for APPLY_QUIET_MS, at most APPLY_LAG_MS (see APPLY_QUIET_MS). */
  async function lull(): Promise<void> {
    const since = performance.now();
    for (;;) {
      const now = performance.now();
      // A commit under way (or queued) counts as one now: a chain of puts, each issued as the one before is answered, is never paused.
      const last = running !== undefined ? now : lastCommitAt;
      const wait = Math.min(last + APPLY_QUIET_MS, since + APPLY_LAG_MS) - now;
      if (wait <= 0 || hurrying > 0) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        hurry = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      hurry = undefined;
    }
  }
  /** Resolves once the groups committed so far are applied (or failed to), whatever is committed after. */
  function appliedSoFar(): Promise<void> {
    return new Promise<void>((reached) => scheduleApply({ reached }));
  }

  /**
   * Applies committed operations: each key's last one only (an earlier put of the same key
   * never touches the disk: its temp file goes back to the pool). Whole-file renames, in
   * three steps so that a reader that is not savepoint never sees a file refer to one that
   * is not there yet: files that are new (history) first, then replaced ones (latest,
   * index), all of a step at once; deletes last, one by one (each prunes directories left
   * empty).
   */
  async function applyMerged(planned: readonly Planned[]): Promise<void> {
    const first = new Map<string, Planned>();
    const last = new Map<string, Planned>();
    for (const p of planned) {
      if (p.op.type === 'check') continue;
      if (!first.has(p.op.key)) first.set(p.op.key, p);
      last.delete(p.op.key); // re-inserted: the map keeps the order of each key's last operation
      last.set(p.op.key, p);
    }
    // Merged away: a put followed by a delete of its key (then a put again) included, its temp file taken over or not.
    giveBack(
      planned.filter((p) => p.temp && last.get(p.op.key) !== p),
      true,
    );
    // A put whose temp file a later put took over is replaced by that one's apply (takeOver).
    const puts = [...last.values()].filter((p) => p.op.type === 'put' && !p.taken);
    const existed = (p: Planned): boolean => first.get(p.op.key)!.before.exists;
    // Directories a put was planned into without them (issue 17: no mkdir on the commit path) are made beside the fills.
    await settleAll([...puts.filter((p) => !p.od).map(makeDir), ...puts.map(fill)]);
    await settleAll(puts.filter((p) => !existed(p)).map(land));
    await settleAll(puts.filter(existed).map(land));
    // A directory a put of this apply landed in is not empty: no rmdir to try after a delete there
    // (a run's history file in, its oldest out, every checkpoint once retention keeps it bounded).
    const holding = new Set(puts.map((p) => keyPath(p.op.key).dirKey));
    for (const p of last.values()) if (p.op.type === 'delete' && existed(p)) await unlinkKey(await openedLate(p), holding.has(keyPath(p.op.key).dirKey));
    // A put taken over stays what reads answer until the put that took it over is committed (or the journal replayed).
    for (const [key, p] of last) if (pending.get(key) === p && !p.taken) pending.delete(key);
  }

  /** Runs every call; rejects (once all settled) with the first failure. */
  async function settleAll(calls: readonly Promise<void>[]): Promise<void> {
    const failed = (await Promise.allSettled(calls)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Makes the directory of a put planned while it was missing, through the hold's cache it
   * was planned with (one walk per directory, from its parent; the cache closes it once its
   * groups are applied). Never follows a link: a symlink planted since is refused, the apply
   * fails and the journal is replayed (which refuses the key too).
   */
  async function makeDir(p: Planned): Promise<void> {
    if (!p.dirs) throw new Error('a put into a missing directory is planned with the cache that makes it');
    p.od = await dirOf(p.dirs, keyPath(p.op.key).dirKey, p.op.key, 'make');
  }
  /**
   * A delete planned while its directory was missing (its key acknowledged, not yet
   * applied): the directory as it is now, walked on disk unless the cache opened it since
   * (what the cache knows missing may have been made by an apply planned with another).
   */
  async function openedLate(p: Planned): Promise<Planned> {
    if (p.od || !p.dirs) return p;
    const dirKey = keyPath(p.op.key).dirKey;
    const walk = p.dirs.ready.get(dirKey) ?? walkRetrying(dirKey, p.op.key, false, undefined, laneIo);
    if (walk instanceof Promise) p.dirs.all.push(walk); // closed with the cache
    p.od = await walk;
    return p;
  }

  /** Writes a put's bytes into its temp file and sets the mtime its version names. */
  async function fill(p: Planned): Promise<void> {
    const temp = p.temp!;
    await lane(() => io.write(temp.fd, (p.op as { bytes: Uint8Array }).bytes));
    await lane(() => io.futimes(temp.fd, p.mtimeSeconds!));
    if (!p.exact) {
      // Timestamps that do not read back as set: the version is the file's own (the commit waits for it).
      const version = versionOf(await lane(() => io.fstat(temp.fd)));
      p.outcome = { type: 'put', key: p.op.key, version };
      p.after = { exists: true, version, mtimeNs: BigInt(version.slice(0, version.indexOf('.'))) };
    }
    // Left open: once renamed over its key it is kept for the checkpoint's fsync (land).
  }

  /** Takes the kept descriptor of `key` out (the caller closes it), if any. */
  function takeKept(key: string): number | undefined {
    const fd = kept.get(key);
    if (fd !== undefined) {
      kept.delete(key);
      keptInProcess--;
    }
    return fd;
  }
  /** Keeps `fd` as the descriptor of the file `key` holds now (closing the one it replaced), or closes it when the process keeps MAX_KEPT. */
  async function keep(key: string, fd: number): Promise<void> {
    const replaced = takeKept(key);
    const closing = replaced === undefined ? [] : [replaced];
    if (keptInProcess < MAX_KEPT) {
      kept.set(key, fd);
      keptInProcess++;
    } else closing.push(fd);
    // The file is in place: a failed close leaks nothing of what is committed.
    await Promise.all(closing.map((c) => lane(() => io.close(c)).catch(() => undefined)));
  }
  /** Closes the kept descriptor of `key` (its file is being deleted), if any. */
  async function unkeep(key: string): Promise<void> {
    const fd = takeKept(key);
    if (fd === undefined) return;
    await lane(() => io.close(fd)).catch(() => undefined);
  }
  /** Closes of dropped descriptors under way (close() waits for them). */
  let dropping: Promise<unknown> = Promise.resolve();
  /**
   * Forgets every kept descriptor — the files may be replaced by someone else (the lock
   * goes) or by a replay — and closes them in the background lane: up to MAX_KEPT closes
   * at once would otherwise queue ahead of the next commit's write in the thread pool.
   */
  function dropKept(): void {
    const fds = [...kept.values()];
    kept.clear();
    keptInProcess -= fds.length;
    if (fds.length > 0) dropping = Promise.all([dropping, ...fds.map((fd) => lane(() => io.close(fd)).catch(() => undefined))]);
  }

  /** Renames a filled temp file over its key (through a fresh walk if the key's directory was pruned and made again meanwhile). */
  async function land(p: Planned): Promise<void> {
    const kp = keyPath(p.op.key);
    try {
      await lane(() => io.rename(p.temp!.path, p.od!.dir.at(kp.base)));
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
      const od = await walkRetrying(kp.dirKey, p.op.key, true);
      try {
        await io.rename(p.temp!.path, od!.dir.at(kp.base));
      } finally {
        await od?.close();
      }
    }
    p.landed = true;
    p.closed = true;
    await keep(p.op.key, p.temp!.fd);
  }

  /** Removes a deleted key's file (found by a fresh walk if its directory was pruned and made again) and prunes emptied directories, unless `inUse` (the directory holds a file this apply put there). */
  async function unlinkKey(p: Planned, inUse = false): Promise<void> {
    await unkeep(p.op.key);
    const kp = keyPath(p.op.key);
    let od = p.od;
    let fresh: OpenedDir | undefined;
    try {
      for (let attempt = 0; od; attempt++) {
        try {
          await lane(() => io.unlink(od!.dir.at(kp.base)));
          break;
        } catch (err) {
          if (errnoOf(err) !== 'ENOENT' || attempt > 0) return;
          od = fresh = await openDir(root, kp.dirKey, p.op.key, false, io);
        }
      }
      if (od && !inUse) await prune(od);
    } finally {
      await fresh?.close();
    }
  }

  /** Closes and removes the temp files of operations that did not land. */
  async function discard(planned: readonly Planned[]): Promise<void> {
    await Promise.all(
      planned.map(async (p) => {
        if (!p.temp || p.landed) return;
        p.landed = true;
        await Promise.all([p.closed ? undefined : io.close(p.temp.fd).catch(() => undefined), io.unlink(p.temp.path).catch(() => undefined)]);
      }),
    );
  }

  async function prune(od: OpenedDir): Promise<void> {
    for (let i = od.chain.length - 1; i > 0; i--) {
      const rel = od.chain[i]!.rel;
      try {
        await io.rmdir(od.chain[i - 1]!.at(rel.slice(rel.lastIndexOf('/') + 1)));
      } catch {
        return;
      }
    }
  }

  /** Where this hold's next record goes (which file, where in it) and its epoch: read from the journal once per hold. */
  async function placeRecord(h: Held): Promise<{ end: number; epoch: number }> {
    if (h.active === undefined || h.end === undefined || h.epoch === undefined) {
      const seen = lastSeen;
      lastSeen = undefined;
      if (seen && (await unchangedSince(seen))) {
        h.active = seen.active;
        h.end = seen.end;
        h.epoch = seen.epoch;
        h.keys = seen.keys;
      } else {
        // Someone else committed (or the journal is not as we left it): their files may have replaced ours.
        dropKept();
        await readPlace(h);
      }
      keptVerified = true;
    }
    return placeNow(h)!;
  }

  /** {@link placeRecord} once this hold knows where records go (undefined before: it reads the journal). */
  function placeNow(h: Held): { end: number; epoch: number } | undefined {
    if (h.active === undefined || h.end === undefined || h.epoch === undefined) return undefined;
    // An empty file starts a new epoch: old records behind offset 0 must never read as part of
    // it. Right after a switch the epoch is the one after the retiring file's (set by rotate).
    if (h.end === 0 && !h.retiring) h.epoch = newEpoch();
    return { end: h.end, epoch: h.epoch };
  }

  /**
   * Reads both journal files to find where commits go: the one with records, else the
   * first. Both with records (a holder that could neither finish its checkpoint nor replay
   * let the lock go), or a failure of ours to apply or checkpoint: nothing is placed, and
   * the next commit replays both files first. Not replayed here: this runs while the
   * group's batches are checked, and a replay closes the directories they use.
   */
  async function readPlace(h: Held): Promise<void> {
    // Our own background checkpoint first: it empties a file.
    await settleRetiring(h);
    const found = needRecovery ? undefined : await Promise.all([readDecoded(0), readDecoded(1)]);
    if (!found || (found[0].records.length > 0 && found[1].records.length > 0)) {
      needRecovery = true;
      throw Object.assign(new Error('the journal must be replayed before the next commit'), { code: 'EAGAIN', syscall: 'journal' });
    }
    const active: FileNo = found[1].records.length > 0 ? 1 : 0;
    const f = found[active];
    h.active = active;
    h.end = f.end;
    h.keys = keysOf(f);
    h.epoch = f.epoch ?? newEpoch();
  }

  /**
   * Whether the journal is as we left it (nobody wrote or emptied it since): the file we
   * wrote still starts with a record of our epoch (or is still empty), no record of that
   * epoch follows where we stopped, and the other file is still empty. Three reads of a
   * header instead of reading the whole journal.
   */
  async function unchangedSince(seen: { readonly active: FileNo; readonly end: number; readonly epoch: number }): Promise<boolean> {
    const [jfd, ofd] = await Promise.all([journalFd(seen.active), journalFd(otherFile(seen.active))]);
    const [head, next, otherHead] = await Promise.all([io.read(jfd, HEADER, 0), io.read(jfd, HEADER, seen.end), io.read(ofd, HEADER, 0)]);
    const recordOf = (b: Uint8Array): number | undefined => {
      if (b.length < HEADER) return undefined;
      const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      return buf.readUInt32BE(0) === MAGIC ? buf.readUInt32BE(8) : undefined;
    };
    if (recordOf(otherHead) !== undefined) return false;
    if (seen.end === 0) return recordOf(head) === undefined;
    return recordOf(head) === seen.epoch && recordOf(next) !== seen.epoch;
  }

  /**
   * Plans a group's batches in order of arrival: batches on keys no earlier batch of the
   * group names (concurrent runs: the common case) at once, a batch on a key an earlier one
   * names after it (its conditions see what that one leaves). Rejects the refused ones.
   */
  async function planGroup(group: readonly Pending[], states: Map<string, KeyState>, cache: DirCache, exact: boolean): Promise<{ item: Pending; planned: Planned[] }[]> {
    const waves: Pending[][] = [];
    let wave: Pending[] = [];
    let named = new Set<string>();
    for (const item of group) {
      if (item.ops.some((op) => named.has(op.key))) {
        waves.push(wave);
        wave = [];
        named = new Set();
      }
      wave.push(item);
      for (const op of item.ops) named.add(op.key);
    }
    waves.push(wave);
    const accepted: { item: Pending; planned: Planned[] }[] = [];
    for (const items of waves) {
      // Planned at once where nothing must be fetched (the keys of a busy run), else through the calls it needs.
      const now = items.map((item): Planned[] | undefined | null => {
        try {
          return planNow(item.ops, states, cache, exact);
        } catch (err) {
          item.reject(err);
          return null;
        }
      });
      const later = items.filter((_, i) => now[i] === undefined);
      const settled = later.length === 0 ? [] : await Promise.allSettled(later.map((item) => planBatch(item.ops, states, cache, exact)));
      items.forEach((item, i) => {
        const planned = now[i];
        if (planned) accepted.push({ item, planned });
        else if (planned === undefined) {
          const r = settled[later.indexOf(item)]!;
          if (r.status === 'fulfilled') accepted.push({ item, planned: r.value });
          else item.reject(r.reason);
        }
      });
    }
    return accepted;
  }

  /**
   * Commits one group of batches under the lock: conditions checked (against what is known
   * of the keys: no call for a busy run's), versions planned, then the commit point — one
   * record written and fdatasynced — and the callers are answered. The files are applied
   * afterwards, in the background.
   */
  async function commitGroup(group: Pending[]): Promise<void> {
    const exact = exactNow ?? (await (exactTimes ??= pool.exactTimes().then(
      (known) => (exactNow = known),
      () => (exactNow = false),
    )));
    await locked(async (lock, h) => {
      if (lock.brokeStale || needRecovery) await recoverLocked();
      const states = (h.states ??= new Map<string, KeyState>());
      const cache = (h.dirs ??= newDirCache(!h.unlisted));
      // Where the record goes is found while the batches are checked (its reads are independent); known already for the rest of a hold.
      const placing = placeNow(h)
        ? undefined
        : placeRecord(h).then(
            () => undefined,
            () => undefined,
          );
      const accepted = placing ? await planGroup(group, states, cache, exact).finally(() => placing) : await planGroup(group, states, cache, exact);
      if (placing) await placing;
      if (accepted.length === 0) return;
      const all = accepted.flatMap((a) => a.planned);
      try {
        await writeRecord(all, h, exact);
      } catch (err) {
        giveBack(all);
        forget(h);
        for (const a of accepted) a.item.reject(err);
        return;
      }
      // Committed. Until the files are applied, this process's reads answer from `pending`.
      for (const p of all) if (p.after) pending.set(p.op.key, p);
      const answers = accepted.map((a) => () => a.item.resolve(a.planned.map((p) => p.outcome)));
      if (!exact) {
        // Versions come from the applied files: answer once they are there.
        scheduleApply(all);
        await drain();
        if (needRecovery) await recoverLocked();
        forget(h);
        answerSpread(answers);
      } else {
        // Answered first: the apply starts on a later turn of the event loop (runApplies), after the caller has resumed.
        answerSpread(answers);
        scheduleApply(all);
      }
      if ((h.end ?? 0) > deps.checkpointBytes) await rotate(h);
    });
  }

  /**
   * Answers a group's callers one per turn of the event loop: each answer resumes a run,
   * which does its next step's work at once (encoding, hashing its next checkpoint). Eight
   * runs answered together would hold the loop for all eight steps in one go; one per turn
   * lets timers and I/O in between (the event-loop delay bench, issue 15).
   */
  function answerSpread(answers: readonly (() => void)[]): void {
    let i = 0;
    const next = (): void => {
      answers[i++]!();
      if (i < answers.length) setImmediate(next);
    };
    if (answers.length > 0) next();
  }

  /**
   * Switches commits to the other journal file and checkpoints the full one in the
   * background: once its groups are applied, the files it names are fsynced and it is
   * emptied, while commits go on in the other file (issue 15: a checkpoint's fsyncs held
   * every commit up). Commits wait only when the other file's own checkpoint is not over
   * yet. After a failure both files are replayed instead. Under the lock.
   */
  async function rotate(h: Held): Promise<void> {
    await settleRetiring(h);
    if (needRecovery) {
      await recoverLocked();
      return;
    }
    const { epoch } = await placeRecord(h);
    const file = h.active!;
    const keys: ReadonlySet<string> = h.keys ?? new Set();
    h.active = otherFile(file);
    h.end = 0;
    h.epoch = nextEpoch(epoch);
    h.keys = new Set();
    h.retiring = { file, keys, done: checkpointRetiring(file, keys) };
  }

  /** The background checkpoint of a full journal file; a failure leaves it to the next replay. */
  async function checkpointRetiring(file: FileNo, keys: ReadonlySet<string>): Promise<void> {
    try {
      await appliedSoFar();
      // A group failed to apply: the next commit (or letting the lock go) replays both files.
      if (needRecovery) return;
      await syncKeys(keys, lane);
      await voidFile(file);
    } catch {
      needRecovery = true;
    }
  }

  /** Waits for this hold's background checkpoint, if any. */
  async function settleRetiring(h: Held | undefined): Promise<void> {
    const r = h?.retiring;
    if (!r) return;
    await r.done;
    if (h.retiring === r) h.retiring = undefined;
  }

  /**
   * The commit point: the record of the planned operations written in place at the
   * journal's end and fdatasynced. Nothing to write (only checks): resolves at once. On
   * failure the record is voided (so no replay applies it) and the error thrown: nothing was
   * committed.
   */
  async function writeRecord(all: readonly Planned[], h: Held, exact: boolean): Promise<void> {
    const ops: JournalOp[] = [];
    const payloads: Uint8Array[] = [];
    for (const { op, outcome } of all) {
      if (op.type === 'put') {
        // The version goes with the bytes: another process reading the journal answers it.
        ops.push(exact ? ['p', op.key, op.bytes.length, (outcome as { version: string }).version] : ['p', op.key, op.bytes.length]);
        payloads.push(op.bytes);
      } else if (op.type === 'delete') ops.push(['d', op.key]);
    }
    if (ops.length === 0) return;
    const at = placeNow(h) ?? (await placeRecord(h));
    let record = encodeRecord(ops, payloads, at.epoch);
    if (at.end > 0 && at.end + record.length > preallocBytes) {
      // Past the preallocated file: switch files rather than grow it.
      await rotate(h);
      record = encodeRecord(ops, payloads, (await placeRecord(h)).epoch);
    }
    const file = h.active ?? 0;
    const jfd = opened[file] ?? (await journalFd(file));
    const end = h.end ?? 0;
    try {
      // The commit point: one write in place, durable when it returns (O_DSYNC; else an fdatasync follows).
      await io.writeAt(jfd, record, end);
      // Temp files for the next commits are made once this write is durable, on a later turn
      // of the event loop: file creations running in the kernel beside the O_DSYNC write slowed
      // it (issue 15, measured interleaved: see docs/performance.md).
      setImmediate(() => pool.refill());
      if (O_DSYNC === undefined) await io.datasync(jfd);
      lastCommitAt = performance.now();
      h.end = end + record.length;
      for (const op of ops) h.keys?.add(op[1]);
    } catch (err) {
      // Not committed: void a whole-but-unsynced or torn record, so no replay applies it.
      h.end = undefined;
      await io
        .writeAt(jfd, new Uint8Array(HEADER), end)
        .then(() => io.datasync(jfd))
        .catch(() => (needRecovery = true));
      throw err;
    }
  }

  /** The acknowledged state a pending operation leaves. */
  const ackedOf = (p: Planned): AckedState => (p.op.type === 'put' ? { bytes: p.op.bytes, version: (p.outcome as { version: string }).version } : { bytes: null });

  /*
   * What the journal says, for reads while another instance holds the lock (its records may
   * not be applied yet): each key's last journaled state. Read incrementally — the records
   * after the last one read, which is read again to notice a journal emptied or a record
   * voided since — so a read costs a header and a short positional read.
   */
  const VIEW_CHUNK = 64 << 10;
  interface View {
    epoch: number;
    start: number;
    end: number;
    keys: Map<string, AckedState>;
  }
  const views: [View | undefined, View | undefined] = [undefined, undefined];
  /** Both files' views, merged in replay order (the newer file's state of a key wins). */
  async function journalView(): Promise<ReadonlyMap<string, AckedState>> {
    const both = await Promise.all([fileView(0), fileView(1)]);
    const out = new Map<string, AckedState>();
    for (const file of replayOrder([both[0]?.keys.size ? both[0].epoch : undefined, both[1]?.keys.size ? both[1].epoch : undefined])) {
      for (const [key, state] of both[file]?.keys ?? []) out.set(key, state);
    }
    return out;
  }
  async function fileView(file: FileNo): Promise<View | undefined> {
    const jfd = await journalFd(file);
    const head = Buffer.from(await io.read(jfd, HEADER, 0));
    if (head.length < HEADER || head.readUInt32BE(0) !== MAGIC) {
      views[file] = undefined;
      return undefined;
    }
    const epoch = head.readUInt32BE(8);
    if (views[file]?.epoch !== epoch) views[file] = { epoch, start: 0, end: 0, keys: new Map() };
    const v = views[file]!;
    let size = VIEW_CHUNK;
    for (;;) {
      const from = v.start;
      const found = decodeJournal(await io.read(jfd, Math.max(size, v.end - from + HEADER), from), epoch);
      const again = from < v.end ? 1 : 0;
      if (again && found.records.length === 0) {
        // The last record read is gone (voided): read the journal afresh.
        Object.assign(v, { start: 0, end: 0, keys: new Map() });
        continue;
      }
      for (const r of found.records.slice(again)) for (const op of r.ops) v.keys.set(op.key, op.type === 'put' ? { bytes: op.bytes, ...(op.version === undefined ? {} : { version: op.version }) } : { bytes: null });
      if (found.records.length > 0) v.start = from + found.lastStart;
      v.end = from + found.end;
      if (found.wants === undefined) return v;
      size = found.wants;
    }
  }

  async function pump(): Promise<void> {
    while (queue.length > 0) {
      const group = queue.splice(0, queue.length);
      try {
        await commitGroup(group);
      } catch (err) {
        for (const item of group) item.reject(err); // a no-op for those already settled
      }
    }
    running = undefined;
  }

  /** Reads one whole journal file. */
  async function readJournal(file: FileNo): Promise<Uint8Array> {
    const jfd = await journalFd(file);
    const size = Number((await io.fstat(jfd)).size);
    return size === 0 ? new Uint8Array(0) : io.read(jfd, size);
  }
  const readDecoded = async (file: FileNo): Promise<DecodedJournal> => decodeJournal(await readJournal(file));

  /**
   * Brings every key the journal names to its last journaled state — both files' records,
   * the older file's first — then checkpoints. Under the lock.
   */
  async function recoverLocked(): Promise<RecoveryReport> {
    await drain();
    await settleRetiring(held);
    // A replay may rewrite any key's file (a new inode): its checkpoint fsyncs the files by path.
    dropKept();
    keptVerified = true;
    const found = await Promise.all([readDecoded(0), readDecoded(1)]);
    const order = replayOrder(epochsOf(found));
    const records = order.flatMap((file) => found[file].records);
    const torn = found[0].torn + found[1].torn;
    const last = new Map<string, Uint8Array | null>();
    for (const r of records) for (const op of r.ops) last.set(op.key, op.type === 'put' ? op.bytes : null);
    let repaired = 0;
    let refused = 0;
    for (const [key, want] of last) {
      try {
        if (await repair(key, want)) repaired++;
      } catch (err) {
        // A key whose path now goes through a symlink or is taken by a directory is not the
        // store's to write: it is left alone rather than blocking every other key's recovery.
        if (!(err instanceof CheckpointError && err.reasonCode === 'checkpoint_key_invalid')) throw err;
        refused++;
      }
    }
    // The files hold the journal's last states now (a rewritten file has a version of its own).
    pending.clear();
    if (held) forget(held);
    await checkpointLocked([...last.keys()]);
    needRecovery = false;
    return { records: records.length, repaired, refused, discardedBytes: torn };
  }

  /** Makes `key` hold `want` (absent for null) unless it already does; true when it changed something. */
  async function repair(key: string, want: Uint8Array | null): Promise<boolean> {
    const kp = keyPath(key);
    let od: OpenedDir | undefined;
    try {
      od = await openDir(root, kp.dirKey, key, want !== null, io);
      const state = await stateOf(od, key);
      if (want === null) {
        if (!state.exists || !od) return false;
        await io.unlink(od.dir.at(kp.base));
        return true;
      }
      if (state.exists && (await sameBytes(od!.dir.at(kp.base), want))) return false;
      const temp = await settleMtime(await writeTemp(od!, want), state);
      try {
        await io.rename(temp.path, od!.dir.at(kp.base));
      } finally {
        await io.close(temp.fd).catch(() => undefined);
      }
      return true;
    } finally {
      await od?.close();
    }
  }

  async function sameBytes(path: string, want: Uint8Array): Promise<boolean> {
    const rfd = await io.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    try {
      const st = await io.fstat(rfd);
      if (Number(st.size) !== want.length) return false;
      return Buffer.from(await io.read(rfd, want.length)).equals(want);
    } finally {
      await io.close(rfd).catch(() => undefined);
    }
  }

  /** fsyncs a key's file in place (gone, or a link: nothing of ours to make durable). */
  async function syncFile(od: OpenedDir, key: string, through: Lane): Promise<void> {
    // Taken out first: a later apply of the key must not close it under the fsync.
    let ffd = takeKept(key);
    if (ffd !== undefined) {
      try {
        await through(() => io.fsync(ffd!));
      } finally {
        await through(() => io.close(ffd!)).catch(() => undefined);
      }
      return;
    }
    try {
      ffd = await through(() => io.open(od.dir.at(keyPath(key).base), O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ELOOP') return;
      throw err;
    }
    try {
      await through(() => io.fsync(ffd));
    } finally {
      await through(() => io.close(ffd)).catch(() => undefined);
    }
  }

  /** Calls made at once, on the commit's path (recovery, close). */
  const direct: Lane = (call) => call();

  /**
   * Makes every file the journal names durable in place (fsync of each file and of every
   * directory on its path), then empties both journal files. Under the lock, with no
   * background checkpoint running.
   */
  async function checkpointLocked(keys?: readonly string[]): Promise<void> {
    // The keys are known while the journal's end is (no hashing of the whole journal on the event loop).
    const names = keys ?? (held?.end !== undefined && held.keys ? [...held.keys] : [...new Set((await Promise.all([readDecoded(0), readDecoded(1)])).flatMap((f) => [...keysOf(f)]))]);
    await syncKeys(names);
    if (held) held.end = undefined;
    await Promise.all([voidFile(0), voidFile(1)]);
    if (held) {
      held.end = 0;
      held.epoch = newEpoch();
      held.keys = new Set();
    }
  }

  /** Empties a journal file: its first record's header voided (the next record there starts a new epoch). */
  async function voidFile(file: FileNo): Promise<void> {
    const jfd = await journalFd(file);
    await io.writeAt(jfd, new Uint8Array(HEADER), 0);
    await io.datasync(jfd);
    views[file] = undefined;
  }

  /** fsyncs the files of `names` and every directory on their paths (`through`: the background lane, or at once). */
  async function syncKeys(names: Iterable<string>, through: Lane = direct): Promise<void> {
    // One walk per directory, not per key: a journal's keys are mostly a few runs' files.
    const byDir = new Map<string, string[]>();
    for (const key of names) {
      const dirKey = keyPath(key).dirKey;
      const list = byDir.get(dirKey);
      if (list) list.push(key);
      else byDir.set(dirKey, [key]);
    }
    const dirs = new Map<string, Promise<void>>();
    await Promise.all(
      [...byDir].map(async ([dirKey, keysInDir]) => {
        const od = await openDir(root, dirKey, keysInDir[0]!, false, io).catch((err: unknown) => {
          if (err instanceof CheckpointError && err.reasonCode === 'checkpoint_key_invalid') return undefined; // see recoverLocked
          throw err;
        });
        if (!od) return;
        try {
          const syncs: Promise<void>[] = [];
          for (const d of od.chain) {
            if (!dirs.has(d.rel)) {
              const done = through(() => io.fsync(d.fd));
              // Awaited below; marked handled now in case another directory's failure ends the wait first.
              done.catch(() => undefined);
              dirs.set(d.rel, done);
              syncs.push(done);
            }
          }
          for (const key of keysInDir) syncs.push(syncFile(od, key, through));
          await Promise.all(syncs);
        } finally {
          await od.close();
        }
      }),
    );
    await Promise.all(dirs.values());
  }

  return {
    commit(ops) {
      return new Promise<BatchOutcome[]>((resolve, reject) => {
        queue.push({ ops, resolve, reject });
        running ??= pump();
      });
    },
    async unapplied(prefix) {
      const out = new Map<string, AckedState>();
      // Ours: while the lock is ours nobody else has records unapplied.
      if (pending.size > 0 || lockOurs) {
        for (const [key, p] of pending) if (key.startsWith(prefix)) out.set(key, ackedOf(p));
        return out;
      }
      // Nobody holds the lock: every record is applied.
      if (!(await lstatIfAny(root.at(JOURNAL_LOCK)))) return out;
      for (const [key, state] of await journalView()) if (key.startsWith(prefix)) out.set(key, state);
      return out;
    },
    async flush() {
      while (running) await running;
      await drain();
      // A background checkpoint under way ends too (its failure is replayed now).
      await settleRetiring(held);
      await releasing?.catch(() => undefined);
      if (needRecovery) await locked(() => recoverLocked());
    },
    recover: () => locked(() => recoverLocked(), false),
    async close() {
      while (running) await running;
      await drain();
      if (fds[0] !== undefined || fds[1] !== undefined) {
        try {
          await locked(async (_lock, h) => {
            await settleRetiring(h);
            if (!keptVerified) dropKept();
            if (needRecovery) await recoverLocked();
            else if ((await Promise.all([readDecoded(0), readDecoded(1)])).some((f) => f.records.length > 0)) await checkpointLocked();
          }, false);
        } finally {
          await Promise.all(
            fds.map(async (opening, file) => {
              fds[file] = undefined;
              opened[file] = undefined;
              await opening?.then((jfd) => io.close(jfd)).catch(() => undefined);
            }),
          );
        }
      }
      if (linger) clearTimeout(linger);
      await letGo();
      if (spare) await dropToken(spare);
      spare = undefined;
      await dropping;
      await pool.close();
    },
  };
}
