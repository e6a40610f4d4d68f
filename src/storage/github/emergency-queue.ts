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

/** The local durable-later queue of githubStorage (phased-workflow-github.md `emergency_fallback`). */
export interface EmergencyQueue {
  /** Reads writes left by an earlier process from the spill storage (once). */
  load(): Promise<void>;
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
  readonly type: 'put' | 'delete';
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

/**
 * Creates the queue. With `spill`, every write is stored there (create-only, under
 * `prefix`) before it is acknowledged, and removed only after it reached GitHub, so a
 * queued checkpoint survives a crash of this process; a new adapter with the same spill
 * storage picks the writes up and pushes them, in order.
 */
export function createEmergencyQueue(spill: StorageAdapter | undefined, prefix: string): EmergencyQueue {
  const items: QueuedWrite[] = [];
  let nextSeq = 1;
  let loaded: Promise<void> | undefined;
  const keyOf = (seq: number): string => `${prefix}${String(seq).padStart(12, '0')}.json`;

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
      const data = fromBase64(o.bytes ?? '');
      if (!data) throw new CheckpointError('checkpoint_schema_invalid', `${key} holds bytes that are not base64`, { details: { key } });
      return { type: 'put', key: o.key, bytes: data, ...cond };
    });
    return { seq: doc.seq, kind: doc.kind, operations, versions: await versionsOf(operations), enqueuedAtMs: doc.enqueuedAtMs, maybeLanded: doc.maybeLanded };
  };

  return {
    load() {
      loaded ??= (async () => {
        if (!spill) return;
        const found: QueuedWrite[] = [];
        for (const entry of await listAll(spill, prefix)) {
          const stored = await spill.get(entry.key);
          // A restarted process may have lost its answer after pushing: check before writing again.
          if (stored) found.push({ ...(await decode(stored.bytes, entry.key)), maybeLanded: true });
        }
        found.sort((a, b) => a.seq - b.seq);
        items.push(...found);
        nextSeq = Math.max(nextSeq, ...found.map((w) => w.seq + 1));
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
          operations: copy.map((op) =>
            op.type === 'put'
              ? { type: 'put', key: op.key, bytes: toBase64(op.bytes), ...(op.ifAbsent ? { ifAbsent: true } : {}), ...(op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {}) }
              : { type: 'delete', key: op.key, ...(op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {}) },
          ),
        };
        // Durable before acknowledged: if this throws, the write is not accepted.
        await spill.put(keyOf(seq), utf8Encode(JSON.stringify(doc)), { ifAbsent: true });
      }
      items.push(write);
      return write;
    },
    async shift(seq) {
      if (items[0]?.seq !== seq) return;
      if (spill) await spill.delete(keyOf(seq));
      items.shift();
    },
    async discard(seq) {
      const i = items.findIndex((w) => w.seq === seq);
      if (i < 0) return false;
      if (spill) await spill.delete(keyOf(seq));
      items.splice(i, 1);
      return true;
    },
    overlay() {
      const out = new Map<string, { bytes: Uint8Array; version: string } | null>();
      for (const w of items) {
        for (const op of w.operations) out.set(op.key, op.type === 'put' ? { bytes: op.bytes, version: w.versions[op.key]! } : null);
      }
      return out;
    },
  };
}
