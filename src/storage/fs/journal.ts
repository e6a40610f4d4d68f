import { constants, type BigIntStats } from 'node:fs';
import { createHash, randomInt } from 'node:crypto';
import { CheckpointError } from '../../model/errors.js';
import type { BatchOperation, BatchOutcome } from '../adapter.js';
import { openDir, type OpenedDir, type RootDir } from './dir.js';
import type { FsIo } from './fd.js';
import { errnoOf, nextMtimeSeconds, versionOf } from './io.js';
import { acquireLock, lstatIfAny, releaseLock, type HeldLock, type LockTiming } from './lock.js';
import { INTERNAL_MARK, newOwner, tempName, type Owner } from './names.js';
import { keyPath, occupiedRefused, symlinkRefused } from './paths.js';

/*
 * The write-ahead journal (issue 15, item 3): a batch's writes become one record written
 * to `<root>/.sp\journal` and fdatasynced once — the commit point — and are then applied to the
 * spec's files by rename (whole files, so a reader that is not savepoint sees an old or a
 * new file, never a torn one). The applied files are not fsynced one by one: the journal is
 * the truth until a checkpoint has fsynced them and emptied it. Opening the store (and
 * taking the journal lock from a holder that died) replays it: every key the journal names
 * is brought to its last journaled state — files that already hold it are not touched, so
 * their versions stay — then checkpointed.
 *
 * One journal per store directory, shared by every process: a lock file (the same
 * link-a-temp-file lock as keys' locks, see lock.ts) serializes commits, so conditions
 * (`ifAbsent`, `ifVersion`, checks) are evaluated and applied under it and hold between
 * processes. Within a process, batches that arrive while a commit is under way are
 * committed together in the next record (group commit): one write, one fdatasync.
 *
 * Record: "SPJ2" | u32 body length | u32 epoch | first 8 bytes of sha256(epoch | body) | body,
 * where body is u32 JSON length | JSON [["p", key, length] | ["d", key], …] | the puts'
 * bytes in order. A record whose length or hash does not match (a torn write) ends the
 * journal, and so does one of another epoch.
 *
 * Why it costs one fdatasync (issue 15): the journal file is preallocated with written
 * zeros, and records are written in place (pwrite at the end of the last one), so the
 * commit's fdatasync has no file size or block allocation to make durable — measured on
 * ext4, half the cost of an fsync of an O_APPEND file that grows. A checkpoint empties the
 * journal by zeroing the first record's header; the next record starts at offset 0 under
 * a new random epoch, so the old records behind it can never be read as part of it.
 */

const { O_RDWR, O_CREAT, O_NOFOLLOW, O_WRONLY, O_EXCL, O_RDONLY, O_NONBLOCK } = constants;
export const JOURNAL_NAME = `${INTERNAL_MARK}journal`;
// The backslash makes it a name no key's lock can have (keys hold none).
const JOURNAL_LOCK = `${INTERNAL_MARK}lock-\\journal`;
const MAGIC = 0x53504a32; // "SPJ2"
const HEADER = 20;
/** Largest preallocation: past it, a big `journalCheckpointBytes` grows the file as records come. */
const MAX_PREALLOC = 64 << 20;
const newEpoch = (): number => randomInt(1, 0xffffffff);

type JournalOp = readonly ['p', string, number] | readonly ['d', string];

/** What a journal needs from its store. */
export interface JournalDeps {
  readonly root: RootDir;
  readonly timing: LockTiming;
  readonly fileMode: number;
  readonly io: FsIo;
  /** Checkpoint (fsync applied files, empty the journal) once it grows past this. */
  readonly checkpointBytes: number;
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
  /** Commits `ops` atomically (all or none), sharing the record with concurrent batches of this process. */
  commit(ops: readonly BatchOperation[]): Promise<BatchOutcome[]>;
  /** Replays and checkpoints the journal under its lock (on open). */
  recover(): Promise<RecoveryReport>;
  /** Waits for pending commits, checkpoints, closes the journal file. */
  close(): Promise<void>;
}

function conflict(key: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });
}

/** A record's seal: the first 8 bytes of sha256 over its epoch field and its body. */
const seal = (epochField: Uint8Array, body: Uint8Array): Buffer => createHash('sha256').update(epochField).update(body).digest().subarray(0, 8);

/** Encodes one record of journal epoch `epoch` (a nonzero u32). */
export function encodeRecord(ops: readonly JournalOp[], payloads: readonly Uint8Array[], epoch = 1): Uint8Array {
  const json = Buffer.from(JSON.stringify(ops), 'utf8');
  const bodyLength = 4 + json.length + payloads.reduce((n, p) => n + p.length, 0);
  const out = Buffer.allocUnsafe(HEADER + bodyLength);
  out.writeUInt32BE(MAGIC, 0);
  out.writeUInt32BE(bodyLength, 4);
  out.writeUInt32BE(epoch, 8);
  out.writeUInt32BE(json.length, HEADER);
  json.copy(out, HEADER + 4);
  let at = HEADER + 4 + json.length;
  for (const p of payloads) {
    out.set(p, at);
    at += p.length;
  }
  seal(out.subarray(8, 12), out.subarray(HEADER)).copy(out, 12);
  return out;
}

/** One decoded record: its operations with their bytes. */
export interface DecodedRecord {
  readonly ops: readonly ({ readonly type: 'put'; readonly key: string; readonly bytes: Uint8Array } | { readonly type: 'delete'; readonly key: string })[];
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
}

/** Decodes the whole records of one epoch at the start of `bytes`. */
export function decodeJournal(bytes: Uint8Array): DecodedJournal {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: DecodedRecord[] = [];
  let at = 0;
  let epoch: number | undefined;
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
          decoded.push({ type: 'put', key: op[1], bytes: new Uint8Array(body.subarray(p, p + op[2])) });
          p += op[2];
        } else decoded.push({ type: 'delete', key: op[1] });
      }
      records.push({ ops: decoded });
    } catch {
      break;
    }
    epoch ??= buf.readUInt32BE(at + 8);
    at += HEADER + length;
  }
  let torn = 0;
  if (at + HEADER <= buf.length && buf.readUInt32BE(at) === MAGIC && sameEpoch(at)) torn = Math.min(HEADER + buf.readUInt32BE(at + 4), buf.length - at);
  return { records, end: at, ...(epoch === undefined ? {} : { epoch }), torn };
}

/** What a key holds while a group is prepared: the file on disk, or what an earlier batch of the group will leave. */
interface KeyState {
  readonly exists: boolean;
  readonly version?: string;
  readonly mtimeNs?: bigint;
}

/** A prepared operation: its temp file written (not yet renamed), its directory open. */
interface Prepared {
  readonly op: BatchOperation;
  readonly od?: OpenedDir;
  readonly temp?: { readonly path: string; readonly mtimeNs: bigint; readonly closed: Promise<void> };
  /** Whether the key held a file before this operation (a put that creates is applied first). */
  readonly existed: boolean;
  readonly outcome: BatchOutcome;
  /** Set once its temp file was renamed into place (nothing left to remove). */
  landed?: boolean;
}

interface Pending {
  readonly ops: readonly BatchOperation[];
  resolve(outcomes: BatchOutcome[]): void;
  reject(err: unknown): void;
}

export function createJournal(deps: JournalDeps): Journal {
  const { root, timing, io } = deps;
  const journalPath = root.at(JOURNAL_NAME);
  const preallocBytes = Math.min(MAX_PREALLOC, Math.ceil((deps.checkpointBytes + 65536) / 4096) * 4096);
  let fd: number | undefined;
  let needRecovery = false;
  const queue: Pending[] = [];
  let running: Promise<void> | undefined;

  /** The journal's descriptor, the file preallocated (under the lock: it may grow it). */
  async function journalFd(): Promise<number> {
    if (fd === undefined) {
      const opened = await io.open(journalPath, O_RDWR | O_CREAT | O_NOFOLLOW, deps.fileMode);
      try {
        const size = Number((await io.fstat(opened)).size);
        if (size < preallocBytes) {
          // Written zeros, not a hole or fallocate(): blocks that are allocated and written
          // leave a commit's fdatasync nothing but the record's own data to flush.
          await io.writeAt(opened, new Uint8Array(preallocBytes - size), size);
          await io.fsync(opened);
        }
        // The journal's own directory entry must survive a power loss before any record counts.
        await io.fsync(root.fd);
      } catch (err) {
        await io.close(opened).catch(() => undefined);
        throw err;
      }
      fd = opened;
    }
    return fd;
  }

  /*
   * The journal lock lingers: taking and releasing it costs eight file-system calls, more
   * than the rest of a commit, so a holder keeps it for LINGER_MS after a commit (the next
   * checkpoint of a busy run usually comes sooner) and at most MAX_HOLD_MS in all, well
   * inside the stale bound. Other processes wait for it as for any lock.
   */
  const LINGER_MS = 2;
  const MAX_HOLD_MS = Math.min(1000, timing.staleAfterMs / 4);
  /** The temp file our lock is a link of, kept between holds while young (one link(2) takes the lock). */
  interface Token {
    readonly path: string;
    readonly fd: number;
    readonly ino: bigint;
    readonly owner: Owner;
  }
  let spare: Token | undefined;
  /** Where the journal ended and its epoch when we last let the lock go (checked, not trusted, on the next hold). */
  let lastSeen: { readonly end: number; readonly epoch: number; readonly keys: Set<string> } | undefined;
  interface Held {
    readonly lock: HeldLock;
    readonly token: Token;
    readonly since: number;
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
     * journaled writer can remove them meanwhile, our own deletes drop the cache, and a
     * directory removed by someone else makes the rename fail (ENOENT) — never a lost write.
     */
    dirs?: DirCache;
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
  /** Releases the lock; the token is kept for the next hold unless `keepToken` is false (nothing more to commit soon). */
  async function letGo(keepToken = true): Promise<void> {
    const h = held;
    held = undefined;
    if (!h) {
      await releasing;
      return;
    }
    lastSeen = h.end !== undefined && h.epoch !== undefined && h.keys ? { end: h.end, epoch: h.epoch, keys: h.keys } : undefined;
    const done = (async () => {
      if (h.dirs) await closeDirs(h.dirs);
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
          if (!busy) void letGo().catch(() => undefined);
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
  /** A temp file whose descriptor is closing (its version final: rename keeps inode, mtime and size). */
  interface ClosingTemp {
    readonly path: string;
    readonly version: string;
    readonly mtimeNs: bigint;
    readonly closed: Promise<void>;
  }
  const closing = (temp: Temp): ClosingTemp => {
    const closed = io.close(temp.fd).catch(() => undefined);
    return { path: temp.path, version: temp.version, mtimeNs: temp.mtimeNs, closed };
  };

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

  /** The directories a group opened, shared by its operations (a checkpoint's keys share their run's directory). */
  interface DirCache {
    readonly byKey: Map<string, Promise<OpenedDir | undefined>>;
    /** Every walk made, to close at the end of the group. */
    readonly all: Promise<OpenedDir | undefined>[];
  }
  const newDirCache = (): DirCache => ({ byKey: new Map(), all: [] });
  async function dirOf(cache: DirCache, dirKey: string, key: string, create: boolean): Promise<OpenedDir | undefined> {
    const cached = cache.byKey.get(dirKey);
    if (cached) {
      const od = await cached.catch(() => undefined);
      if (od) return od;
    }
    // Not opened yet, or found missing (or refused) before: walk again, it may exist now.
    const opening = openDir(root, dirKey, key, create, io);
    cache.byKey.set(dirKey, opening);
    cache.all.push(opening);
    return opening;
  }
  async function closeDirs(cache: DirCache): Promise<void> {
    const all = await Promise.allSettled(cache.all);
    await Promise.all(all.map((r) => (r.status === 'fulfilled' ? r.value?.close() : undefined)));
  }

  /** What the key holds: learned earlier under this hold, or stat'ed now (and remembered). */
  async function knownState(states: Map<string, KeyState>, od: OpenedDir | undefined, key: string): Promise<KeyState> {
    const known = states.get(key);
    if (known) return known;
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
  }

  /** Checks one operation's condition against what the key holds (no file is written). */
  async function checkOne(op: BatchOperation, states: Map<string, KeyState>, cache: DirCache): Promise<Checked> {
    const kp = keyPath(op.key);
    const od = await dirOf(cache, kp.dirKey, op.key, op.type === 'put');
    const before = await knownState(states, od, op.key);
    const cond = op as { ifAbsent?: boolean; ifVersion?: string };
    if (cond.ifAbsent && before.exists) throw conflict(op.key, 'key exists');
    if (cond.ifVersion !== undefined && (!before.exists || before.version !== cond.ifVersion)) throw conflict(op.key, before.exists ? 'version changed' : 'key is gone');
    return { op, ...(od ? { od } : {}), before };
  }

  /** Writes a checked put's temp file (its version final); deletes and checks need none. */
  async function materialize(c: Checked): Promise<Prepared> {
    const { op, od, before } = c;
    if (op.type === 'put') {
      const temp = closing(await settleMtime(await writeTemp(od!, op.bytes), before));
      return { op, od: od!, temp, existed: before.exists, outcome: { type: 'put', key: op.key, version: temp.version } };
    }
    const entry: { od?: OpenedDir } = od ? { od } : {};
    if (op.type === 'delete') return { op, ...entry, existed: before.exists, outcome: { type: 'delete', key: op.key, existed: before.exists } };
    return { op, ...entry, existed: before.exists, outcome: { type: 'check', key: op.key } };
  }

  /** Checks a batch's conditions; rejects with the first refusal. */
  async function check(ops: readonly BatchOperation[], states: Map<string, KeyState>, cache: DirCache): Promise<Checked[]> {
    const settled = await Promise.allSettled(ops.map((op) => checkOne(op, states, cache)));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<Checked>).value);
  }

  /** Writes a checked batch's temp files, all at once. On failure leaves nothing behind. */
  async function materializeAll(checked: readonly Checked[]): Promise<Prepared[]> {
    const settled = await Promise.allSettled(checked.map(materialize));
    const done = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await discard(done);
      throw failed.reason;
    }
    return done;
  }

  /** What the keys hold once a batch is applied: later conditions in the same hold check against it. */
  function remember(prepared: readonly Prepared[], states: Map<string, KeyState>): void {
    for (const p of prepared) {
      if (p.op.type === 'put') states.set(p.op.key, { exists: true, version: (p.outcome as { version: string }).version, mtimeNs: p.temp!.mtimeNs });
      else if (p.op.type === 'delete') states.set(p.op.key, { exists: false });
    }
  }

  /**
   * Checks a batch's conditions against `states` (what earlier batches of the group leave) or
   * the files, and writes its temp files — its operations at once (a batch names each key
   * once, so they are independent). On failure leaves nothing behind.
   */
  async function prepare(ops: readonly BatchOperation[], states: Map<string, KeyState>, cache: DirCache): Promise<Prepared[]> {
    const done = await materializeAll(await check(ops, states, cache));
    remember(done, states);
    return done;
  }

  /** Waits for the temp files' descriptors to close and removes the temp files that did not land. */
  async function discard(prepared: readonly Prepared[]): Promise<void> {
    await Promise.all(prepared.map(async (p) => (p.temp ? Promise.all([p.temp.closed, p.landed ? undefined : io.unlink(p.temp.path).catch(() => undefined)]) : undefined)));
  }

  /**
   * Applies a committed group: each key's last operation only (an earlier put of the same
   * key in the group is superseded: its temp file is removed). Whole-file renames, in three
   * steps so that a reader that is not savepoint never sees a file refer to one that is not
   * there yet: files that are new (history) first, then replaced ones (latest, index), all
   * of a step at once; deletes last, one by one (each prunes directories left empty).
   */
  async function apply(prepared: readonly Prepared[]): Promise<void> {
    const last = new Map<string, Prepared>();
    for (const p of prepared) {
      if (p.op.type === 'check') continue;
      last.delete(p.op.key); // re-inserted: the map keeps the order of each key's last operation
      last.set(p.op.key, p);
    }
    const puts = [...last.values()].filter((p) => p.op.type === 'put');
    await renameAll(puts.filter((p) => !p.existed));
    await renameAll(puts.filter((p) => p.existed));
    for (const p of last.values()) {
      if (p.op.type !== 'delete' || !p.od) continue;
      try {
        await io.unlink(p.od.dir.at(keyPath(p.op.key).base));
      } catch (err) {
        if (errnoOf(err) !== 'ENOENT') throw err;
      }
      await prune(p.od);
    }
  }

  /** Renames the puts' temp files into place, all at once; rejects (once all settled) with the first failure. */
  async function renameAll(puts: readonly Prepared[]): Promise<void> {
    const settled = await Promise.allSettled(
      puts.map(async (p) => {
        await io.rename(p.temp!.path, p.od!.dir.at(keyPath(p.op.key).base));
        p.landed = true;
      }),
    );
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
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

  /** Where this hold's next record goes and its epoch: read from the journal once per hold. */
  async function placeRecord(h: Held): Promise<{ end: number; epoch: number }> {
    if (h.end === undefined || h.epoch === undefined) {
      const seen = lastSeen;
      lastSeen = undefined;
      if (seen && (await unchangedSince(seen))) {
        h.end = seen.end;
        h.epoch = seen.epoch;
        h.keys = seen.keys;
      } else {
        const found = decodeJournal(await readJournal());
        h.end = found.end;
        h.keys = new Set(found.records.flatMap((r) => r.ops.map((o) => o.key)));
        h.epoch = found.epoch ?? newEpoch();
      }
    }
    // An empty journal starts a new epoch: old records behind offset 0 must never read as part of it.
    if (h.end === 0) h.epoch = newEpoch();
    return { end: h.end, epoch: h.epoch };
  }

  /**
   * Whether the journal is as we left it (nobody wrote or emptied it since): its first
   * record is still of our epoch (or it is still empty) and no record of that epoch follows
   * where we stopped. Two reads of a header instead of reading the whole journal.
   */
  async function unchangedSince(seen: { readonly end: number; readonly epoch: number }): Promise<boolean> {
    const jfd = await journalFd();
    const [head, next] = await Promise.all([io.read(jfd, HEADER, 0), io.read(jfd, HEADER, seen.end)]);
    const recordOf = (b: Uint8Array): number | undefined => {
      if (b.length < HEADER) return undefined;
      const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      return buf.readUInt32BE(0) === MAGIC ? buf.readUInt32BE(8) : undefined;
    };
    if (seen.end === 0) return recordOf(head) === undefined;
    return recordOf(head) === seen.epoch && recordOf(next) !== seen.epoch;
  }

  /**
   * Prepares a group's batches in order of arrival: batches on keys no earlier batch of the
   * group names (concurrent runs: the common case) at once, a batch on a key an earlier one
   * names after it (its conditions see what that one leaves). Rejects the refused ones.
   */
  async function prepareGroup(group: readonly Pending[], states: Map<string, KeyState>, cache: DirCache): Promise<{ item: Pending; prepared: Prepared[] }[]> {
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
    const accepted: { item: Pending; prepared: Prepared[] }[] = [];
    for (const items of waves) {
      const settled = await Promise.allSettled(items.map((item) => prepare(item.ops, states, cache)));
      settled.forEach((r, i) => {
        if (r.status === 'fulfilled') accepted.push({ item: items[i]!, prepared: r.value });
        else items[i]!.reject(r.reason);
      });
    }
    return accepted;
  }

  /** Commits one group of batches under the lock. */
  async function commitGroup(group: Pending[]): Promise<void> {
    await locked(async (lock, h) => {
      if (lock.brokeStale || needRecovery) await recoverLocked();
      const states = (h.states ??= new Map<string, KeyState>());
      const cache = (h.dirs ??= newDirCache());
      // Where the record goes is found while the batches are prepared (its reads are independent).
      const placing = placeRecord(h).then(
        () => undefined,
        () => undefined,
      );
      let keep = false;
      try {
        const ok = independent(group) ? await commitOverlapped(group, states, cache, h, placing) : await commitInOrder(group, states, cache, h, placing);
        if (!ok) h.states = undefined;
        // A delete may have removed directories (pruned), a failure may come from one removed
        // under us: walk afresh next time.
        keep = ok && !group.some((item) => item.ops.some((op) => op.type === 'delete'));
      } finally {
        if (!keep) {
          // Last: the renames above name files through these descriptors.
          h.dirs = undefined;
          await closeDirs(cache);
        }
      }
    });
  }

  /** No two batches of the group name one key (concurrent runs, or one writer: the usual case). */
  function independent(group: readonly Pending[]): boolean {
    const named = new Set<string>();
    for (const item of group) {
      for (const op of item.ops) {
        if (named.has(op.key)) return false;
        named.add(op.key);
      }
    }
    return true;
  }

  /** Batches that build on each other: each prepared (temp files written) after the one before, then one record. */
  async function commitInOrder(group: Pending[], states: Map<string, KeyState>, cache: DirCache, h: Held, placing: Promise<void>): Promise<boolean> {
    const accepted = await prepareGroup(group, states, cache);
    await placing;
    if (accepted.length === 0) return true;
    const all = accepted.flatMap((a) => a.prepared);
    try {
      await writeRecord(all.map((p) => p.op), h);
    } catch (err) {
      for (const a of accepted) a.item.reject(err);
      await discard(all);
      return false;
    }
    return applyCommitted(accepted, h);
  }

  /**
   * Independent batches: their conditions checked first, then the record's write and
   * `fdatasync` (the commit point) at the same time as the temp files are written — the two
   * were a chain of round trips through the thread pool, one after the other. The renames
   * wait for both. A crash in between leaves either no record (the temp files are swept on
   * open) or a committed record (replayed on open, whatever the temp files hold).
   */
  async function commitOverlapped(group: Pending[], states: Map<string, KeyState>, cache: DirCache, h: Held, placing: Promise<void>): Promise<boolean> {
    const settled = await Promise.allSettled(group.map((item) => check(item.ops, states, cache)));
    const checked: { item: Pending; checked: Checked[] }[] = [];
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') checked.push({ item: group[i]!, checked: r.value });
      else group[i]!.reject(r.reason);
    });
    await placing;
    if (checked.length === 0) return true;
    const [record, made] = await Promise.all([
      writeRecord(checked.flatMap((c) => c.checked.map((x) => x.op)), h).then(
        () => undefined,
        (err: unknown) => ({ err }),
      ),
      Promise.allSettled(checked.map((c) => materializeAll(c.checked))),
    ]);
    const prepared = made.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    const tempFailed = made.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (record || tempFailed) {
      await discard(prepared);
      if (!record) {
        // Committed, but a temp file could not be written: replay now, so the files agree with
        // the journal before the lock goes. The callers get the error: the batch stands in the
        // journal (applied by the replay, or by the next commit or open), unacknowledged.
        needRecovery = true;
        await recoverLocked().catch(() => undefined);
      }
      for (const c of checked) c.item.reject(record ? record.err : tempFailed!.reason);
      return false;
    }
    const accepted = checked.map((c, i) => ({ item: c.item, prepared: (made[i] as PromiseFulfilledResult<Prepared[]>).value }));
    for (const a of accepted) remember(a.prepared, states);
    return applyCommitted(accepted, h);
  }

  /**
   * The commit point: the record of `ops` written in place at the journal's end and
   * fdatasynced. Nothing to write (only checks): resolves at once. On failure the record is
   * voided (so no replay applies it) and the error thrown: nothing was committed.
   */
  async function writeRecord(all: readonly BatchOperation[], h: Held): Promise<void> {
    const ops: JournalOp[] = [];
    const payloads: Uint8Array[] = [];
    for (const op of all) {
      if (op.type === 'put') {
        ops.push(['p', op.key, op.bytes.length]);
        payloads.push(op.bytes);
      } else if (op.type === 'delete') ops.push(['d', op.key]);
    }
    if (ops.length === 0) return;
    const jfd = await journalFd();
    const at = await placeRecord(h);
    let record = encodeRecord(ops, payloads, at.epoch);
    if (at.end > 0 && at.end + record.length > preallocBytes) {
      // Past the preallocated file: checkpoint now rather than grow it.
      await checkpointLocked();
      record = encodeRecord(ops, payloads, (await placeRecord(h)).epoch);
    }
    const end = h.end ?? 0;
    try {
      // The commit point: one write in place and one fdatasync.
      await io.writeAt(jfd, record, end);
      await io.datasync(jfd);
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

  /** Applies a committed group's prepared batches and answers their callers. Resolves false when the group failed (its callers got the error). */
  async function applyCommitted(accepted: readonly { item: Pending; prepared: Prepared[] }[], h: Held): Promise<boolean> {
    const all = accepted.flatMap((a) => a.prepared);
    const wrote = all.some((p) => p.op.type !== 'check');
    let ok: boolean;
    try {
      try {
        await apply(all);
      } catch (err) {
        // Committed but half applied: replay now, so the files agree with the journal before
        // the lock goes. If that fails too, the batch still stands in the journal (the next
        // commit or open replays it) but is not acknowledged.
        needRecovery = true;
        await recoverLocked().catch(() => {
          throw err;
        });
      }
      for (const a of accepted) a.item.resolve(a.prepared.map((p) => p.outcome));
      ok = true;
      if (wrote && (h.end ?? 0) > deps.checkpointBytes) await checkpointLocked();
    } catch (err) {
      // After the commit point the batch stands in the journal: the next commit (or open) replays it.
      needRecovery = true;
      for (const a of accepted) a.item.reject(err);
      ok = false;
    } finally {
      await discard(all);
    }
    return ok;
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

  /** Reads the whole journal. */
  async function readJournal(): Promise<Uint8Array> {
    const jfd = await journalFd();
    const size = Number((await io.fstat(jfd)).size);
    return size === 0 ? new Uint8Array(0) : io.read(jfd, size);
  }

  /** Brings every key the journal names to its last journaled state, then checkpoints. Under the lock. */
  async function recoverLocked(): Promise<RecoveryReport> {
    const bytes = await readJournal();
    const { records, torn } = decodeJournal(bytes);
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
    if (held) held.states = undefined;
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

  /**
   * Makes every file the journal names durable in place (fsync of each file and of every
   * directory on its path), then empties the journal. Under the lock.
   */
  async function checkpointLocked(keys?: readonly string[]): Promise<void> {
    // The keys are known while the journal's end is (no hashing of the whole journal on the event loop).
    const names = keys ?? (held?.end !== undefined && held.keys ? [...held.keys] : [...new Set(decodeJournal(await readJournal()).records.flatMap((r) => r.ops.map((o) => o.key)))]);
    const dirs = new Map<string, Promise<void>>();
    await Promise.all(
      names.map(async (key) => {
        const kp = keyPath(key);
        const od = await openDir(root, kp.dirKey, key, false, io).catch((err: unknown) => {
          if (err instanceof CheckpointError && err.reasonCode === 'checkpoint_key_invalid') return undefined; // see recoverLocked
          throw err;
        });
        if (!od) return;
        try {
          const syncs: Promise<void>[] = [];
          for (const d of od.chain) {
            if (!dirs.has(d.rel)) {
              const done = io.fsync(d.fd);
              // Awaited below; marked handled now in case another key's failure ends the wait first.
              done.catch(() => undefined);
              dirs.set(d.rel, done);
              syncs.push(done);
            }
          }
          let ffd: number | undefined;
          try {
            ffd = await io.open(od.dir.at(kp.base), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
            syncs.push(io.fsync(ffd));
          } catch (err) {
            if (errnoOf(err) !== 'ENOENT' && errnoOf(err) !== 'ELOOP') throw err;
          }
          try {
            await Promise.all(syncs);
          } finally {
            if (ffd !== undefined) await io.close(ffd).catch(() => undefined);
          }
        } finally {
          await od.close();
        }
      }),
    );
    await Promise.all(dirs.values());
    const jfd = await journalFd();
    if (held) held.end = undefined;
    // Emptied by voiding the first record's header; the next record starts a new epoch.
    await io.writeAt(jfd, new Uint8Array(HEADER), 0);
    await io.datasync(jfd);
    if (held) {
      held.end = 0;
      held.epoch = newEpoch();
      held.keys = new Set();
    }
  }

  return {
    commit(ops) {
      return new Promise<BatchOutcome[]>((resolve, reject) => {
        queue.push({ ops, resolve, reject });
        running ??= pump();
      });
    },
    recover: () => locked(() => recoverLocked(), false),
    async close() {
      while (running) await running;
      if (fd !== undefined) {
        try {
          await locked(async () => {
            if (decodeJournal(await readJournal()).records.length > 0) await checkpointLocked();
          }, false);
        } finally {
          await io.close(fd).catch(() => undefined);
          fd = undefined;
        }
      }
      if (linger) clearTimeout(linger);
      await letGo();
      if (spare) await dropToken(spare);
      spare = undefined;
    },
  };
}
