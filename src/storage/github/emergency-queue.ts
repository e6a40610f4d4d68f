import { parseJson } from '../../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../model/errors.js';
import { listAll, type BatchOperation, type StorageAdapter } from '../adapter.js';
import { fromBase64, toBase64 } from './encoding.js';
import { gitBlobSha } from './git-blob.js';

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

interface SpilledOperation {
  readonly type: 'put' | 'delete' | 'check';
  readonly key: string;
  readonly bytes?: string;
  readonly ifAbsent?: boolean;
  readonly ifVersion?: string;
}

interface SpilledWrite {
  readonly format: 'savepoint-github-queue/1';
  readonly seq: number;
  readonly kind: QueuedWrite['kind'];
  readonly enqueuedAtMs: number;
  readonly maybeLanded: boolean;
  readonly operations: readonly SpilledOperation[];
}

/** One operation as the spill stores it (bytes in base64; a check keeps its condition, never becomes a write). */
function spilled(op: BatchOperation): SpilledOperation {
  const cond = { ...(op.type !== 'delete' && op.ifAbsent ? { ifAbsent: true } : {}), ...(op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {}) };
  if (op.type === 'put') return { type: 'put', key: op.key, bytes: toBase64(op.bytes), ...cond };
  return { type: op.type, key: op.key, ...cond };
}

/**
 * Creates the queue. With `spill`, every write is stored there before it is acknowledged,
 * and removed only after it reached GitHub, so a queued checkpoint survives a crash of this
 * process; a new adapter with the same spill picks the writes up and pushes them, in order.
 */
export function createEmergencyQueue(spill: QueueSpill | undefined): EmergencyQueue {
  const items: QueuedWrite[] = [];
  /** The spill's name of each queued write, by seq. */
  const names = new Map<number, string>();
  let nextSeq = 1;
  let loaded: Promise<void> | undefined;
  const fileOf = (seq: number): string => `${String(seq).padStart(12, '0')}.json`;

  const versionsOf = async (operations: readonly BatchOperation[]): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    for (const op of operations) if (op.type === 'put') out[op.key] = await gitBlobSha(op.bytes);
    return out;
  };

  const decode = async (bytes: Uint8Array, key: string): Promise<QueuedWrite> => {
    const doc = parseJson(utf8Decode(bytes, key), key) as unknown as SpilledWrite;
    if (doc.format !== 'savepoint-github-queue/1' || !Array.isArray(doc.operations)) {
      throw new CheckpointError('checkpoint_schema_invalid', `${key} is not a savepoint GitHub queue entry`, { details: { key } });
    }
    const operations: BatchOperation[] = doc.operations.map((o) => {
      const cond = { ...(o.ifAbsent ? { ifAbsent: true } : {}), ...(o.ifVersion !== undefined ? { ifVersion: o.ifVersion } : {}) };
      if (o.type === 'delete') return { type: 'delete', key: o.key, ...(o.ifVersion !== undefined ? { ifVersion: o.ifVersion } : {}) };
      if (o.type === 'check') {
        if (o.ifVersion !== undefined) return { type: 'check', key: o.key, ifVersion: o.ifVersion };
        if (o.ifAbsent === true) return { type: 'check', key: o.key, ifAbsent: true };
        throw new CheckpointError('checkpoint_schema_invalid', `${key} holds a check without a condition`, { details: { key } });
      }
      if (o.type !== 'put') throw new CheckpointError('checkpoint_schema_invalid', `${key} holds an operation of unknown type`, { details: { key } });
      const data = fromBase64(o.bytes ?? '');
      if (!data) throw new CheckpointError('checkpoint_schema_invalid', `${key} holds bytes that are not base64`, { details: { key } });
      return { type: 'put', key: o.key, bytes: data, ...cond };
    });
    return { seq: doc.seq, kind: doc.kind, operations, versions: await versionsOf(operations), enqueuedAtMs: doc.enqueuedAtMs, maybeLanded: doc.maybeLanded };
  };

  const removeSpilled = async (seq: number): Promise<void> => {
    const name = names.get(seq);
    if (spill && name !== undefined) await spill.remove(name);
    names.delete(seq);
  };

  return {
    durable: spill?.durable ?? false,
    async close() {
      await spill?.close?.();
    },
    load() {
      loaded ??= (async () => {
        if (!spill) return;
        const found: { w: QueuedWrite; name: string }[] = [];
        for (const entry of await spill.load()) found.push({ w: await decode(entry.bytes, entry.name), name: entry.name });
        // Renumbered in the spill's order (queues of several crashed processes may reuse numbers);
        // new entries are numbered past every stored one so their names never collide.
        nextSeq = Math.max(1, ...found.map((f) => f.w.seq + 1), found.length + 1);
        found.forEach((f, i) => {
          // A restarted process may have lost its answer after pushing: check before writing again.
          items.push({ ...f.w, seq: i + 1, maybeLanded: true });
          names.set(i + 1, f.name);
        });
      })();
      return loaded;
    },
    get size() {
      return items.length;
    },
    entries: () => [...items],
    peek: () => items[0],
    async enqueue(kind, operations, maybeLanded, nowMs) {
      const seq = nextSeq++;
      const copy: BatchOperation[] = operations.map((op) => (op.type === 'put' ? { ...op, bytes: op.bytes.slice() } : { ...op }));
      const write: QueuedWrite = { seq, kind, operations: copy, versions: await versionsOf(copy), enqueuedAtMs: nowMs, maybeLanded };
      if (spill) {
        const doc: SpilledWrite = {
          format: 'savepoint-github-queue/1',
          seq,
          kind,
          enqueuedAtMs: nowMs,
          maybeLanded,
          operations: copy.map(spilled),
        };
        // Durable before acknowledged: if this throws, the write is not accepted.
        names.set(seq, await spill.store(fileOf(seq), utf8Encode(JSON.stringify(doc))));
      }
      items.push(write);
      return write;
    },
    async shift(seq) {
      if (items[0]?.seq !== seq) return;
      await removeSpilled(seq);
      items.shift();
    },
    async discard(seq) {
      const i = items.findIndex((w) => w.seq === seq);
      if (i < 0) return false;
      await removeSpilled(seq);
      items.splice(i, 1);
      return true;
    },
    overlay() {
      const out = new Map<string, { bytes: Uint8Array; version: string } | null>();
      for (const w of items) {
        for (const op of w.operations) {
          if (op.type === 'check') continue; // a fence writes nothing
          out.set(op.key, op.type === 'put' ? { bytes: op.bytes, version: w.versions[op.key]! } : null);
        }
      }
      return out;
    },
  };
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
    const cond: { ifAbsent?: true; ifVersion?: string } = first.type !== 'delete' && first.ifAbsent ? { ifAbsent: true } : first.ifVersion !== undefined ? { ifVersion: first.ifVersion } : {};
    if (last === undefined) out.push(first); // only checks: the first one speaks of GitHub's state
    else if (last.type === 'put') out.push({ type: 'put', key, bytes: last.bytes, ...cond });
    else if (cond.ifAbsent) out.push({ type: 'check', key, ifAbsent: true });
    else out.push({ type: 'delete', key, ...(cond.ifVersion !== undefined ? { ifVersion: cond.ifVersion } : {}) });
  }
  return out;
}
