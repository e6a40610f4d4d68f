/**
 * A custom StorageAdapter, and how to hold it to savepoint's contract.
 *
 * `compressedMapStorage()` is a Map-backed store with a twist: it keeps values
 * gzip-compressed (as a KV service with a storage quota might), and enforces a limit on
 * the *uncompressed* size, which it declares in its capabilities. Everything else is
 * what any adapter must do: validate keys with `assertKey`, copy bytes, give every write
 * a new version, make conditional writes atomic, list in code-unit order, honour close().
 *
 * The conformance suite runs on it in examples/custom-adapter.test.ts:
 *   npx vitest run examples/custom-adapter.test.ts
 * This file shows it in use:
 *   npx tsx examples/custom-adapter.ts
 */
import { pathToFileURL } from 'node:url';
import { assertKey, assertPrefix, gunzip, gzip } from 'savepoint/toolkit';
import {
  CheckpointError,
  createWriter,
  defaultProfile,
  isCheckpointError,
  listAll,
  type DeleteOptions,
  type PutOptions,
  type PutResult,
  type StorageAdapter,
  type StorageEntry,
  type StoredObject,
} from 'savepoint';

/** Options of {@link compressedMapStorage}. */
export interface CompressedMapStorageOptions {
  /**
   * Largest (uncompressed) value accepted, in bytes.
   * @default 1048576
   */
  maxValueBytes?: number;
}

interface Cell {
  readonly zipped: Uint8Array;
  readonly size: number;
  readonly version: string;
}

/** A Map-backed StorageAdapter that stores values gzip-compressed. */
export function compressedMapStorage(options: CompressedMapStorageOptions = {}): StorageAdapter & { readonly storedBytes: number } {
  const maxValueBytes = options.maxValueBytes ?? 1024 * 1024;
  const cells = new Map<string, Cell>();
  let writes = 0;
  let closed = false;

  const ensureOpen = (): void => {
    if (closed) throw new CheckpointError('checkpoint_closed', 'compressedMapStorage is closed');
  };
  const conflict = (key: string, why: string): CheckpointError =>
    new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });

  return {
    name: 'compressed-map',
    // Declared, never guessed: no batch(), conditions hold only inside this process, a size limit.
    capabilities: { atomicBatch: false, crossProcessConditional: false, maxValueBytes },

    get storedBytes(): number {
      let total = 0;
      for (const cell of cells.values()) total += cell.zipped.length;
      return total;
    },

    async get(key: string): Promise<StoredObject | undefined> {
      ensureOpen();
      assertKey(key);
      const cell = cells.get(key);
      // gunzip returns fresh bytes: the caller gets a private copy.
      return cell && { bytes: gunzip(cell.zipped), version: cell.version };
    },

    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      // Everything up to the Map write is synchronous, so the check and the write are atomic
      // in this single-threaded store (an `await` in between would open a race window).
      ensureOpen();
      assertKey(key);
      if (bytes.length > maxValueBytes) {
        throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over ${maxValueBytes}`, {
          details: { key, size: bytes.length },
        });
      }
      const current = cells.get(key);
      if (opts.ifAbsent && current) throw conflict(key, 'key exists');
      if (opts.ifVersion !== undefined && current?.version !== opts.ifVersion)
        throw conflict(key, current ? 'version changed' : 'key is gone');
      // A write counter makes every version new, even for identical bytes (a content hash would not).
      const version = `w${++writes}`;
      cells.set(key, { zipped: gzip(bytes), size: bytes.length, version });
      return { version };
    },

    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      ensureOpen();
      assertKey(key);
      const current = cells.get(key);
      if (opts.ifVersion !== undefined && current?.version !== opts.ifVersion)
        throw conflict(key, current ? 'version changed' : 'key is gone');
      return cells.delete(key);
    },

    async *list(prefix: string): AsyncIterable<StorageEntry> {
      ensureOpen();
      assertPrefix(prefix);
      // Plain `<` on strings compares UTF-16 code units: the order the contract asks for.
      const keys = [...cells.keys()].filter((k) => k.startsWith(prefix)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const key of keys) {
        const cell = cells.get(key);
        if (cell) yield { key, version: cell.version, size: cell.size };
      }
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
}

async function main(): Promise<void> {
  const storage = compressedMapStorage({ maxValueBytes: 64 * 1024 });

  // Any savepoint component runs on it — here a writer with the default profile.
  const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-42' });
  for (let step = 1; step <= 3; step++) {
    const r = await writer.checkpoint({
      source: 'step_boundary',
      status: 'in_progress',
      payload: { step, notes: 'lorem ipsum '.repeat(200) },
    });
    console.log(r.ok ? `checkpoint ${r.sequence}: ${r.outcome} → ${r.key}` : `checkpoint failed: ${r.reasonCode}`);
  }
  await writer.close();

  const entries = await listAll(storage, 'checkpoints/run-42/');
  const logical = entries.reduce((n, e) => n + e.size, 0);
  console.log(`${entries.length} keys, ${logical} bytes as written, ${storage.storedBytes} bytes stored compressed`);

  // Conditional writes: exactly one of two writers holding the same version wins.
  const { version } = await storage.put('notes/plan.md', new TextEncoder().encode('v1'));
  const [a, b] = await Promise.allSettled([
    storage.put('notes/plan.md', new TextEncoder().encode('from A'), { ifVersion: version }),
    storage.put('notes/plan.md', new TextEncoder().encode('from B'), { ifVersion: version }),
  ]);
  console.log(
    `racing replaces: A ${a.status}, B ${b.status}${b.status === 'rejected' && isCheckpointError(b.reason, 'checkpoint_conflict') ? ' (checkpoint_conflict)' : ''}`,
  );
  console.log(`notes/plan.md = ${JSON.stringify(new TextDecoder().decode((await storage.get('notes/plan.md'))!.bytes))}`);

  // The declared limit is enforced, with a stable reason code.
  try {
    await storage.put('too/big.bin', new Uint8Array(64 * 1024 + 1));
  } catch (err) {
    console.log(`oversize put refused: ${isCheckpointError(err) ? err.reasonCode : String(err)}`);
  }
  await storage.close();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
