import { listAll, type BatchOperation, type StorageAdapter } from '../../contract/storage.js';
import { decodeQueuedWrite, encodeQueuedWrite, versionsOf } from './queue-codec.js';

/** A write accepted while GitHub's rate limit was exhausted, waiting to be pushed. */
export interface QueuedWrite {
  /** Position in the queue: writes are pushed in ascending order. */
  readonly seq: number;
  readonly kind: 'put' | 'delete' | 'batch';
  readonly operations: readonly BatchOperation[];
  /** The version each put will have once stored (git blob shas, so they are real versions already). */
  readonly versions: Readonly<Record<string, string>>;
  readonly enqueuedAtMs: number;
  /** An earlier attempt may have landed (its answer was lost): pushing checks before writing. */
  readonly maybeLanded: boolean;
}

/** The keys a queued write touches, in order. */
export const keysOf = (w: QueuedWrite): string[] => w.operations.map((o) => o.key);

/**
 * Where the queue keeps its writes across crashes. `store` resolves only once the entry is
 * durable (the write is acknowledged after it); `load` returns what earlier processes left,
 * oldest first, each under the name `remove` takes.
 */
export interface QueueSpill {
  /** True when stored entries survive a crash of this process (files, a database), false for memory. */
  readonly durable: boolean;
  load(): Promise<readonly { readonly name: string; readonly bytes: Uint8Array }[]>;
  /** Stores a new entry (`file` is unique within this queue); resolves the name `remove` takes. */
  store(file: string, bytes: Uint8Array): Promise<string>;
  remove(name: string): Promise<void>;
  /** Releases what this queue holds (an empty folder, say). */
  close?(): Promise<void>;
}

/** A spill in any StorageAdapter (e.g. `fsStorage`), under `prefix`, create-only. */
export function storageSpill(storage: StorageAdapter, prefix: string): QueueSpill {
  return {
    durable: true,
    async load() {
      const out: { name: string; bytes: Uint8Array }[] = [];
      for (const entry of await listAll(storage, prefix)) {
        const stored = await storage.get(entry.key);
        if (stored) out.push({ name: entry.key, bytes: stored.bytes });
      }
      return out;
    },
    async store(file, bytes) {
      await storage.put(`${prefix}${file}`, bytes, { ifAbsent: true });
      return `${prefix}${file}`;
    },
    async remove(name) {
      await storage.delete(name);
    },
  };
}

/** The local durable-later queue of githubStorage (phased-workflow-github.md `emergency_fallback`). */
export interface EmergencyQueue {
  /** Reads writes left by an earlier process from the spill storage (once). */
  load(): Promise<void>;
  /** Whether an acknowledged queued write survives a crash of this process. */
  readonly durable: boolean;
  /** Releases the spill (after the queue was pushed). */
  close(): Promise<void>;
  readonly size: number;
  entries(): readonly QueuedWrite[];
  peek(): QueuedWrite | undefined;
  /** Accepts a write; resolves once it is held (in memory, and in the spill storage when there is one). */
  enqueue(kind: QueuedWrite['kind'], operations: readonly BatchOperation[], maybeLanded: boolean, nowMs: number): Promise<QueuedWrite>;
  /** Drops the oldest write after it reached GitHub. */
  shift(seq: number): Promise<void>;
  /** Drops write `seq` wherever it is (the user gave it up); false when there is none. */
  discard(seq: number): Promise<boolean>;
  /** What reads see: key → bytes and version of its last queued put, or `null` for a queued delete. */
  overlay(): ReadonlyMap<string, { bytes: Uint8Array; version: string } | null>;
}

/** What the queue keeps: its writes in order, their names in the spill, and the next number. */
interface QueueState {
  readonly spill: QueueSpill | undefined;
  /** Queued writes, oldest first. */
  readonly items: QueuedWrite[];
  /** The spill's name of each queued write, by seq. */
  readonly names: Map<number, string>;
  nextSeq: number;
  /** The one load of what earlier processes spilled. */
  loaded: Promise<void> | undefined;
}

/**
 * Creates the queue. With `spill`, every write is stored there before it is acknowledged,
 * and removed only after it reached GitHub, so a queued checkpoint survives a crash of this
 * process; a new adapter with the same spill picks the writes up and pushes them, in order.
 */
export function createEmergencyQueue(spill: QueueSpill | undefined): EmergencyQueue {
  const q: QueueState = { spill, items: [], names: new Map(), nextSeq: 1, loaded: undefined };
  return {
    durable: spill?.durable ?? false,
    async close() {
      await spill?.close?.();
    },
    load: () => (q.loaded ??= loadSpilled(q)),
    get size() {
      return q.items.length;
    },
    entries: () => [...q.items],
    peek: () => q.items[0],
    enqueue: (kind, operations, maybeLanded, nowMs) => enqueueWrite(q, kind, operations, maybeLanded, nowMs),
    async shift(seq) {
      if (q.items[0]?.seq !== seq) return;
      await removeSpilled(q, seq);
      q.items.shift();
    },
    async discard(seq) {
      const i = q.items.findIndex((w) => w.seq === seq);
      if (i < 0) return false;
      await removeSpilled(q, seq);
      q.items.splice(i, 1);
      return true;
    },
    overlay: () => overlayOf(q.items),
  };
}

async function loadSpilled(q: QueueState): Promise<void> {
  if (!q.spill) return;
  const found: { w: QueuedWrite; name: string }[] = [];
  for (const entry of await q.spill.load()) found.push({ w: await decodeQueuedWrite(entry.bytes, entry.name), name: entry.name });
  // Renumbered in the spill's order (queues of several crashed processes may reuse numbers);
  // new entries are numbered past every stored one so their names never collide.
  q.nextSeq = Math.max(1, ...found.map((f) => f.w.seq + 1), found.length + 1);
  found.forEach((f, i) => {
    // A restarted process may have lost its answer after pushing: check before writing again.
    q.items.push({ ...f.w, seq: i + 1, maybeLanded: true });
    q.names.set(i + 1, f.name);
  });
}

const fileOf = (seq: number): string => `${String(seq).padStart(12, '0')}.json`;

async function enqueueWrite(
  q: QueueState,
  kind: QueuedWrite['kind'],
  operations: readonly BatchOperation[],
  maybeLanded: boolean,
  nowMs: number,
): Promise<QueuedWrite> {
  const seq = q.nextSeq++;
  const copy: BatchOperation[] = operations.map((op) => (op.type === 'put' ? { ...op, bytes: op.bytes.slice() } : { ...op }));
  const write: QueuedWrite = { seq, kind, operations: copy, versions: await versionsOf(copy), enqueuedAtMs: nowMs, maybeLanded };
  if (q.spill) {
    // Durable before acknowledged: if this throws, the write is not accepted.
    q.names.set(seq, await q.spill.store(fileOf(seq), encodeQueuedWrite(write)));
  }
  q.items.push(write);
  return write;
}

async function removeSpilled(q: QueueState, seq: number): Promise<void> {
  const name = q.names.get(seq);
  if (q.spill && name !== undefined) await q.spill.remove(name);
  q.names.delete(seq);
}

/** What reads see: key → bytes and version of its last queued put, or `null` for a queued delete. */
function overlayOf(items: readonly QueuedWrite[]): Map<string, { bytes: Uint8Array; version: string } | null> {
  const out = new Map<string, { bytes: Uint8Array; version: string } | null>();
  for (const w of items) {
    for (const op of w.operations) {
      if (op.type === 'check') continue; // a fence writes nothing
      out.set(op.key, op.type === 'put' ? { bytes: op.bytes, version: w.versions[op.key]! } : null);
    }
  }
  return out;
}

/**
 * The queued writes `writes` (oldest first) as ONE atomic batch with the same end state:
 * each key's last operation, under the condition its first operation put on what GitHub
 * holds (later conditions were checked against the queue itself when each write was
 * accepted). A file created and deleted again within the queue is never written: a `check`
 * that it is still absent remains. A queued lease `check` on a key that an earlier queued
 * write puts is satisfied by that put and drops out.
 *
 * Pushing this instead of each write costs one commit for the whole queue — how writes held
 * below the rate-limit floor (phased-workflow-github.md `batching_strategy`) reach GitHub.
 */
export function mergeQueuedWrites(writes: readonly QueuedWrite[]): BatchOperation[] {
  const byKey = new Map<string, { first: BatchOperation; last: BatchOperation | undefined }>();
  for (const w of writes) {
    for (const op of w.operations) {
      const seen = byKey.get(op.key);
      if (!seen) byKey.set(op.key, { first: op, last: op.type === 'check' ? undefined : op });
      else if (op.type !== 'check') seen.last = op;
    }
  }
  const out: BatchOperation[] = [];
  for (const [key, { first, last }] of byKey) {
    // What the first operation required of GitHub's state.
    const cond: { ifAbsent?: true; ifVersion?: string } =
      first.type !== 'delete' && first.ifAbsent ? { ifAbsent: true } : first.ifVersion !== undefined ? { ifVersion: first.ifVersion } : {};
    if (last === undefined)
      out.push(first); // only checks: the first one speaks of GitHub's state
    else if (last.type === 'put') out.push({ type: 'put', key, bytes: last.bytes, ...cond });
    else if (cond.ifAbsent) out.push({ type: 'check', key, ifAbsent: true });
    else out.push({ type: 'delete', key, ...(cond.ifVersion !== undefined ? { ifVersion: cond.ifVersion } : {}) });
  }
  return out;
}
