/**
 * SavepointSaver on `savepoint/postgres` beside LangGraph's PostgresSaver in one process, both on
 * one `pg.Pool` (max 10) of one real PostgreSQL (fsync on): many threads checkpointing at once.
 *
 * A superstep is what LangGraph's loop sends a checkpointer: a task's writes (`putWrites`, ~1 KB)
 * under the current checkpoint, then the next checkpoint (`put`, ~1 KB of state, its parent the
 * current one). Each thread starts with `getTuple` (the load of an `invoke`), counted in its first
 * superstep. Threads are new, or already 100 or 10,000 checkpoints long, written before by
 * another saver instance (a restarted service: each round's saver meets the thread for the first
 * time). `keepLast: false` is the saver's default; `keepLast: 50` bounds a thread.
 *
 * Per cell: supersteps per second and the p99 superstep latency, rounds interleaved between the
 * two savers after warm-up rounds of each on threads of their own (see `warmUp`); ratios of
 * medians. The progress line gives each round's ratio, and savepoint's statements per superstep
 * (the store's group commit sends fewer than two once the pool's write slots are all taken).
 *
 * The writer cells (`writer:` in a cell spec) run savepoint's writer on the same server beside the
 * same PostgresSaver: see langgraph-concurrency-writer.ts.
 *
 * The fs cells (`fs:` in a cell spec) run the same workload on `fsStorage({ dir })` as users make it
 * (the packed layout; BENCH_LGC_FS_STORE picks another) beside LangGraph's SqliteSaver with
 * synchronous=FULL, in a fresh directory each under LANGGRAPH_BENCH_DIR (default the OS's
 * temporary directory): see langgraph-concurrency-fs.ts.
 *
 *   npm run bench -- langgraph-concurrency --no-record
 *   BENCH_LGC_ROUNDS=9  BENCH_LGC_CELLS=1x0,8x100,fs:8x100x50 ([fs:]threads x history[xkeepLast]; default: every row)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { SavepointSaver } from '../src/entries/langgraph.js';
import { postgresStorage, type PostgresStorage } from '../src/entries/postgres.js';
import { findPostgresBin, startPostgres } from '../tests/support/postgres-server.js';
import {
  cellRows,
  describeCell,
  measure,
  mediansOf,
  parseCells,
  prefill,
  roundRatios,
  stepsPerThread,
  warmUp,
  type Cell,
  type CellResults,
} from './concurrency-workload.js';
import { creationCostUs } from './creation-cost.js';
import { fmt, type BenchRow } from './harness.js';
import { creationRow, fsCellRowsOrFailure } from './langgraph-concurrency-fs.js';
import { writerCellRows, type WriterPeers } from './langgraph-concurrency-writer.js';

/**
 * Measured rounds of each saver a cell: nine. A round is short (64 threads run 6 supersteps each,
 * about a tenth of a second), so a server checkpoint, an autovacuum or another process's burst
 * slows a whole round; with five, two such rounds of one saver moved a cell's ratio of medians by
 * a third between runs (64 threads new: 1.26–1.79× in three runs of one tree).
 */
const ROUNDS = Number(process.env.BENCH_LGC_ROUNDS ?? 9);
/** Supersteps measured per round and cell, shared by its threads (at least 6 per thread). */
const SUPERSTEPS = Number(process.env.BENCH_LGC_SUPERSTEPS ?? 384);
const TABLE = 'bench_lgc';
const SCHEMA = 'bench_lgc_peer';

type Mode = 'savepoint' | 'langgraph';

const PG_CELLS: readonly Cell[] = [
  { store: 'pg', threads: 1, history: 0, keepLast: false },
  { store: 'pg', threads: 1, history: 100, keepLast: false },
  { store: 'pg', threads: 1, history: 10_000, keepLast: false },
  { store: 'pg', threads: 8, history: 0, keepLast: false },
  { store: 'pg', threads: 8, history: 100, keepLast: false },
  { store: 'pg', threads: 8, history: 10_000, keepLast: false },
  { store: 'pg', threads: 64, history: 0, keepLast: false },
  { store: 'pg', threads: 64, history: 100, keepLast: false },
  { store: 'pg', threads: 8, history: 100, keepLast: 50 },
  { store: 'pg', threads: 64, history: 100, keepLast: 50 },
];

/** Threads 10,000 checkpoints long are left out (`fs:1x10000` runs one): 30,000 files a thread to prefill and remove, 15 s or more each. */
const FS_CELLS: readonly Cell[] = [
  { store: 'fs', threads: 1, history: 0, keepLast: false },
  { store: 'fs', threads: 1, history: 100, keepLast: false },
  { store: 'fs', threads: 8, history: 0, keepLast: false },
  { store: 'fs', threads: 8, history: 100, keepLast: false },
  { store: 'fs', threads: 64, history: 0, keepLast: false },
  { store: 'fs', threads: 64, history: 100, keepLast: false },
  { store: 'fs', threads: 8, history: 100, keepLast: 50 },
];

/** The writer's cells: the saver's PostgreSQL cells, `keepLast` 50 standing for the writer's automatic retention on. */
const WRITER_CELLS: readonly Cell[] = PG_CELLS.map((c) => ({ ...c, store: 'writer' }));

function cellsWanted(): readonly Cell[] {
  const spec = process.env.BENCH_LGC_CELLS;
  return spec ? parseCells(spec) : [...PG_CELLS, ...WRITER_CELLS, ...FS_CELLS];
}

interface Peers {
  readonly pool: pg.Pool;
  readonly storage: PostgresStorage;
  readonly fillPool: pg.Pool;
  readonly fillStorage: PostgresStorage;
}

/** A saver of `mode` as a freshly started service makes it. */
function saverOf(mode: Mode, peers: Peers, keepLast: number | false, fill = false): BaseCheckpointSaver {
  if (mode === 'savepoint') return new SavepointSaver({ storage: fill ? peers.fillStorage : peers.storage, keepLast });
  return new PostgresSaver(fill ? peers.fillPool : peers.pool, undefined, { schema: SCHEMA });
}

let tags = 0;

async function pgCellRows(peers: Peers, cell: Cell): Promise<BenchRow[]> {
  const steps = stepsPerThread(cell, SUPERSTEPS);
  const sets: Record<Mode, string[]> = { savepoint: [], langgraph: [] };
  const tag = `c${++tags}`;
  for (const mode of ['savepoint', 'langgraph'] as Mode[]) {
    sets[mode] = Array.from({ length: cell.threads }, (_, t) => `${tag}-${mode}-${t}`);
    // Long threads are filled once, by another saver instance, and reused by every round (each adds a few).
    if (cell.history > 0) await prefill(saverOf(mode, peers, cell.keepLast, true), sets[mode], cell.history);
  }
  for (const mode of ['savepoint', 'langgraph'] as Mode[])
    await warmUp(() => saverOf(mode, peers, cell.keepLast), sets[mode], steps, cell.history > 0);
  const results: CellResults = { savepoint: [], peer: [] };
  // Savepoint's statements per superstep, its first getTuple included (each write statement is a commit).
  let statements = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const mode of (r % 2 === 0 ? ['savepoint', 'langgraph'] : ['langgraph', 'savepoint']) as Mode[]) {
      const threads = cell.history > 0 ? sets[mode] : sets[mode].map((t) => `${t}-r${r}`);
      const before = peers.storage.stats().roundTrips;
      results[mode === 'savepoint' ? 'savepoint' : 'peer'].push(await measure(saverOf(mode, peers, cell.keepLast), threads, steps));
      if (mode === 'savepoint') statements += peers.storage.stats().roundTrips - before;
    }
  }
  const m = mediansOf(results);
  const what = describeCell(cell);
  process.stderr.write(
    `  ${what}: ${fmt(m.savepoint.perSecond)} vs ${fmt(m.peer.perSecond)} supersteps/s; p99 ${fmt(m.savepoint.p99)} vs ${fmt(m.peer.p99)} ms; savepoint ${fmt(statements / (ROUNDS * cell.threads * steps))} statements/superstep; rounds ${roundRatios(results, cell.threads === 1 ? (x) => x.p50 : (x) => x.perSecond)}\n`,
  );
  return cellRows(`SavepointSaver vs PostgresSaver, one pool, ${what}`, cell, results);
}

async function pgRows(cells: readonly Cell[]): Promise<BenchRow[]> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("langgraph-concurrency bench: PostgreSQL binaries not found (install Debian's postgresql package)");
  const server = await startPostgres(bin, { fsync: true });
  const pool = new pg.Pool({ connectionString: server.url, max: 10 });
  // Prefill needs no durability: its commits do not wait for the WAL flush.
  const fillPool = new pg.Pool({ connectionString: server.url, max: 10, options: '-c synchronous_commit=off' });
  const peers: Peers = {
    pool,
    fillPool,
    storage: postgresStorage({ pool, table: TABLE }),
    fillStorage: postgresStorage({ pool: fillPool, table: TABLE }),
  };
  try {
    await peers.storage.migrate();
    await new PostgresSaver(pool, undefined, { schema: SCHEMA }).setup();
    const rows: BenchRow[] = [];
    for (const cell of cells.filter((c) => c.store === 'pg')) rows.push(...(await pgCellRows(peers, cell)));
    const writerPeers: WriterPeers = {
      storage: peers.storage,
      fillStorage: peers.fillStorage,
      peer: (fill) => saverOf('langgraph', peers, false, fill),
    };
    for (const cell of cells.filter((c) => c.store === 'writer'))
      rows.push(...(await writerCellRows(writerPeers, cell, ROUNDS, SUPERSTEPS)));
    return rows;
  } finally {
    await peers.storage.close();
    await peers.fillStorage.close();
    await pool.end();
    await fillPool.end();
    await server.destroy();
  }
}

async function fsRows(cells: readonly Cell[]): Promise<BenchRow[]> {
  const work = mkdtempSync(join(process.env.LANGGRAPH_BENCH_DIR ?? tmpdir(), 'savepoint-bench-lgc-'));
  try {
    const before = creationCostUs(work, 'before');
    const rows: BenchRow[] = [];
    for (const cell of cells) rows.push(...(await fsCellRowsOrFailure(work, cell, ROUNDS, SUPERSTEPS)));
    rows.push(creationRow(before, creationCostUs(work, 'after')));
    return rows;
  } finally {
    const removing = performance.now();
    rmSync(work, { recursive: true, force: true });
    process.stderr.write(`  fs cells' directory removed in ${fmt((performance.now() - removing) / 1000)} s\n`);
  }
}

export async function bench(): Promise<BenchRow[]> {
  const cells = cellsWanted();
  const pgCells = cells.filter((c) => c.store === 'pg' || c.store === 'writer');
  const fsCells = cells.filter((c) => c.store === 'fs');
  return [...(pgCells.length > 0 ? await pgRows(pgCells) : []), ...(fsCells.length > 0 ? await fsRows(fsCells) : [])];
}
