/**
 * The fs cells of the langgraph-concurrency bench: SavepointSaver on `fsStorage({ dir })` (the
 * packed layout a new directory gets; {@link FS_STORE} picks another) beside LangGraph's
 * SqliteSaver with `synchronous=FULL` (the durability fsStorage gives), many threads of one
 * process at once. Each cell has a fresh directory for each store.
 *
 * SqliteSaver runs on better-sqlite3, whose calls are synchronous: a put holds the event loop
 * through its fsync, so its threads take turns whatever their number. That is the peer as users
 * meet it. fsStorage's commits are asynchronous, and the puts of threads that arrive while one
 * group is being written go together in the next (group commit: one sync for many), which the
 * progress line shows as durable writes per superstep.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { CheckpointError, listAll, memoryStorage } from '../src/index.js';
import { SavepointSaver } from '../src/entries/langgraph.js';
import { createFsStorage, fsStorage } from '../src/storage/fs/index.js';
import { packedStoreOf } from '../src/storage/fs/packed-layout.js';
import { createPackedFsStorage, type PackedFsOptions, type PackedFsStorage } from '../src/storage/fs-packed/index.js';
import type { StorageAdapter } from '../src/index.js';
import {
  cellRows,
  describeCell,
  measure,
  mediansOf,
  prefill,
  roundRatios,
  stepsPerThread,
  warmUp,
  type Cell,
  type CellResults,
} from './concurrency-workload.js';
import { fmt, type BenchRow } from './harness.js';
import { SqliteSaver } from './sqlite-peer.js';
import { countingIo } from '../tests/support/journal-records.js';

/**
 * By default the cells run on `fsStorage({ dir })` as a user makes it: a new directory the saver
 * declares for, so the packed layout (segment files, no file per key). `BENCH_LGC_FS_STORE=journal`
 * (or `files`) runs them on the file layout (`layout: 'files'`, its journal); `packed` on `fsStorage({ dir,
 * layout: 'packed' })`; `packed:fdatasync`, `packed:sync-writes`, `packed:adaptive-writes` and
 * `packed:async-reads` (comma-joined after `packed:`) open the packed store itself
 * (src/storage/fs-packed) in that flavour, which the public option does not offer.
 */
const FS_STORE = process.env.BENCH_LGC_FS_STORE ?? 'default';
if (!['default', 'journal', 'files', 'packed'].includes(FS_STORE) && !FS_STORE.startsWith('packed:'))
  throw new Error(
    `langgraph-concurrency bench: BENCH_LGC_FS_STORE must be default, journal (files), packed or packed:<flavours>, not ${FS_STORE}`,
  );
const isPacked = FS_STORE !== 'journal' && FS_STORE !== 'files';
const flavoured = FS_STORE.startsWith('packed:');

function packedFlavour(): Omit<PackedFsOptions, 'dir'> {
  const knobs = FS_STORE.split(':')[1]?.split(',') ?? [];
  return {
    sync: knobs.includes('fdatasync') ? 'fdatasync' : 'dsync',
    writes: knobs.includes('sync-writes') ? 'sync' : knobs.includes('adaptive-writes') ? 'adaptive' : 'async',
    reads: knobs.includes('async-reads') ? 'async' : 'sync',
  };
}

/** The packed store of `dir` and the store the saver is given (the same, or fsStorage's layout over it). */
function packed(dir: string): { readonly storage: StorageAdapter; readonly packed: PackedFsStorage } {
  if (flavoured) {
    const store = createPackedFsStorage({ dir, ...packedFlavour() });
    return { storage: store, packed: store };
  }
  const storage = fsStorage(FS_STORE === 'default' ? { dir } : { dir, layout: 'packed' });
  // What SavepointSaver's constructor says first (here before it, for the packed store's counts).
  storage.declareReaders?.('savepoint');
  return { storage, packed: packedStoreOf(storage)! };
}

const storeName = !isPacked
  ? 'fs journal'
  : flavoured
    ? `fs packed store ${JSON.stringify(packedFlavour())}`
    : FS_STORE === 'default'
      ? 'fsStorage({ dir }): packed layout'
      : 'fs packed layout';

/** What the rows say of the peer, next to its figures. */
const PEER_NOTE = ' (SqliteSaver FULL: better-sqlite3, synchronous calls)';

function sqliteSaver(path: string, synchronous: 'FULL' | 'OFF'): SqliteSaver {
  const saver = SqliteSaver.fromConnString(path);
  saver.db.pragma(`synchronous = ${synchronous}`);
  return saver;
}

/**
 * The cell's long threads, written by other saver instances. Savepoint's go to a memory store
 * whose files are then copied into the directory, not fsynced: prefilling through the journal
 * ran at the store's speed (64 threads of 100 took 14–18 s), and the files are what the journal
 * would have left (fsStorage reads any file of its directory). Checked: a saver on the directory
 * finds each thread's newest checkpoint.
 */
async function prefillStores(cell: Cell, fsDir: string, dbPath: string, threads: Record<'savepoint' | 'peer', string[]>): Promise<void> {
  const memory = memoryStorage();
  const writer = new SavepointSaver({ storage: memory, keepLast: cell.keepLast });
  await prefill(writer, threads.savepoint, cell.history);
  const keys = await listAll(memory, '');
  if (isPacked) {
    // One record of every key: what the store would hold after the prefill's supersteps.
    const fill = packed(fsDir).packed;
    await fill.batch(
      await Promise.all(keys.map(async ({ key }) => ({ type: 'put' as const, key, bytes: (await memory.get(key))!.bytes }))),
    );
    await fill.close();
  } else
    for (const { key } of keys) {
      const path = join(fsDir, key);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, (await memory.get(key))!.bytes);
    }
  const copy: StorageAdapter = isPacked ? packed(fsDir).storage : createFsStorage({ dir: fsDir, layout: 'files' });
  const reader = new SavepointSaver({ storage: copy });
  for (const thread of threads.savepoint) {
    const config = { configurable: { thread_id: thread, checkpoint_ns: '' } };
    const [want, got] = [await writer.getTuple(config), await reader.getTuple(config)];
    if (!want || got?.checkpoint.id !== want.checkpoint.id)
      throw new Error(`langgraph-concurrency bench: the prefill of ${thread} did not land in ${fsDir}`);
  }
  await copy.close();
  // SQLite's prefill needs no durability, as PostgreSQL's does not (synchronous_commit=off).
  const peerFill = sqliteSaver(dbPath, 'OFF');
  await prefill(peerFill, threads.peer, cell.history);
  peerFill.db.close();
}

/** One fs cell in a fresh directory under `work`: `rounds` interleaved rounds of each saver, `total` supersteps a round. */
export async function fsCellRows(work: string, cell: Cell, rounds: number, total: number): Promise<BenchRow[]> {
  const started = performance.now();
  const at = mkdtempSync(join(work, `fs-${cell.threads}x${cell.history}-`));
  const fsDir = join(at, 'savepoint');
  mkdirSync(join(at, 'sqlite'));
  const dbPath = join(at, 'sqlite', 'checkpoints.db');
  const steps = stepsPerThread(cell, total);
  const sets = {
    savepoint: Array.from({ length: cell.threads }, (_, t) => `savepoint-${t}`),
    peer: Array.from({ length: cell.threads }, (_, t) => `peer-${t}`),
  };
  if (cell.history > 0) await prefillStores(cell, fsDir, dbPath, sets);
  const filled = performance.now();
  const counted = countingIo();
  const opened = isPacked ? packed(fsDir) : undefined;
  const packedStore = opened?.packed;
  const storage: StorageAdapter = opened?.storage ?? createFsStorage({ dir: fsDir, layout: 'files' }, { io: counted.io });
  // Durable writes so far: the journal's records, or the packed store's group writes.
  const writes = (): number => (packedStore ? packedStore.stats().writes : counted.records());
  const peer = sqliteSaver(dbPath, 'FULL');
  const results: CellResults = { savepoint: [], peer: [] };
  let records = 0;
  try {
    // Each store opened (the journal replayed, SQLite's tables made) and each saver warmed up before the clock starts.
    const nobody = { configurable: { thread_id: 'warm-up', checkpoint_ns: '' } };
    await new SavepointSaver({ storage }).getTuple(nobody);
    await peer.getTuple(nobody);
    await warmUp(() => new SavepointSaver({ storage, keepLast: cell.keepLast }), sets.savepoint, steps, cell.history > 0);
    await warmUp(() => peer, sets.peer, steps, cell.history > 0);
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 === 0 ? (['savepoint', 'peer'] as const) : (['peer', 'savepoint'] as const)) {
        const threads = cell.history > 0 ? sets[mode] : sets[mode].map((t) => `${t}-r${r}`);
        // A new SavepointSaver each round meets the threads for the first time, as a restarted service's.
        const saver: BaseCheckpointSaver = mode === 'savepoint' ? new SavepointSaver({ storage, keepLast: cell.keepLast }) : peer;
        const before = writes();
        results[mode].push(await measure(saver, threads, steps));
        if (mode === 'savepoint') records += writes() - before;
      }
    }
  } finally {
    await storage.close();
    peer.db.close();
  }
  const m = mediansOf(results);
  const what = describeCell(cell);
  process.stderr.write(
    `  fs ${what}: ${fmt(m.savepoint.perSecond)} vs ${fmt(m.peer.perSecond)} supersteps/s; p99 ${fmt(m.savepoint.p99)} vs ${fmt(m.peer.p99)} ms; savepoint (${storeName}) ${fmt(records / (rounds * cell.threads * steps))} durable writes/superstep; rounds ${roundRatios(results, cell.threads === 1 ? (x) => x.p50 : (x) => x.perSecond)}; ${fmt((filled - started) / 1000)} s prefill, ${fmt((performance.now() - filled) / 1000)} s rounds\n`,
  );
  return cellRows(`SavepointSaver(${storeName}) vs SqliteSaver synchronous=FULL, one process, ${what}`, cell, results, PEER_NOTE);
}

/**
 * {@link fsCellRows}, or a row saying the cell failed when the store refused a write: under heavy
 * machine load a record's durable write has outlasted the journal lock's lease (the store then
 * acknowledges nothing and says to retry), and one such cell should not lose every other row.
 */
export async function fsCellRowsOrFailure(work: string, cell: Cell, rounds: number, total: number): Promise<BenchRow[]> {
  try {
    return await fsCellRows(work, cell, rounds, total);
  } catch (err) {
    if (!(err instanceof CheckpointError)) throw err;
    process.stderr.write(`  fs ${describeCell(cell)}: failed, ${err.message}\n`);
    return [
      {
        area: 'langgraph',
        name: `SavepointSaver(${storeName}) vs SqliteSaver synchronous=FULL, one process, ${describeCell(cell)}: failed`,
        savepoint: err.reasonCode,
        baseline: '—',
        ratio: '—',
        target: 'no failure',
        met: false,
      },
    ];
  }
}

/** The reported row: what a file creation cost in the fs cells' directory, before and after them. */
export function creationRow(before: number, after: number): BenchRow {
  return {
    area: 'langgraph',
    name: `file creation in the concurrency fs cells' directory, before / after them (each superstep on fs makes 2 files and 1 directory; SQLite none)`,
    savepoint: `${fmt(before)} / ${fmt(after)} µs/file`,
    baseline: '—',
    ratio: '—',
    target: '— (reported)',
    met: true,
  };
}
