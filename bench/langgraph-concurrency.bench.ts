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
 * two savers; ratios of medians. The progress line also gives savepoint's statements per superstep
 * (the store's group commit sends fewer than two once the pool's write slots are all taken).
 *
 *   npm run bench -- langgraph-concurrency --no-record
 *   BENCH_LGC_ROUNDS=3  BENCH_LGC_CELLS=1x0,8x100 (threads x history[xkeepLast]; default: every row)
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { SavepointSaver } from '../src/entries/langgraph.js';
import { postgresStorage, type PostgresStorage } from '../src/entries/postgres.js';
import { findPostgresBin, startPostgres } from '../tests/support/postgres-server.js';
import { fmt, median, type BenchRow } from './harness.js';

const ROUNDS = Number(process.env.BENCH_LGC_ROUNDS ?? 3);
/** Supersteps measured per round and cell, shared by its threads (at least 6 per thread). */
const SUPERSTEPS = Number(process.env.BENCH_LGC_SUPERSTEPS ?? 384);
const TABLE = 'bench_lgc';
const SCHEMA = 'bench_lgc_peer';

type Mode = 'savepoint' | 'langgraph';

/** One row of the matrix: threads at once, checkpoints each thread holds before, the saver's bound. */
interface Cell {
  readonly threads: number;
  readonly history: number;
  readonly keepLast: number | false;
}

const ALL_CELLS: readonly Cell[] = [
  { threads: 1, history: 0, keepLast: false },
  { threads: 1, history: 100, keepLast: false },
  { threads: 1, history: 10_000, keepLast: false },
  { threads: 8, history: 0, keepLast: false },
  { threads: 8, history: 100, keepLast: false },
  { threads: 8, history: 10_000, keepLast: false },
  { threads: 64, history: 0, keepLast: false },
  { threads: 64, history: 100, keepLast: false },
  { threads: 8, history: 100, keepLast: 50 },
  { threads: 64, history: 100, keepLast: 50 },
];

function cellsWanted(): readonly Cell[] {
  const spec = process.env.BENCH_LGC_CELLS;
  if (!spec) return ALL_CELLS;
  return spec.split(',').map((s) => {
    const [threads, history, keep] = s.split('x').map(Number);
    return { threads: threads!, history: history!, keepLast: keep ? keep : false };
  });
}

const NOTE = 'x'.repeat(1000);

/** The state of one thread as the loop carries it. */
interface Cursor {
  config: RunnableConfig;
  step: number;
}

/** One superstep on `saver`: the task's writes under the current checkpoint, then the next checkpoint. */
async function superstep(saver: BaseCheckpointSaver, cursor: Cursor): Promise<void> {
  const step = ++cursor.step;
  if (cursor.config.configurable?.['checkpoint_id'] !== undefined)
    await saver.putWrites(cursor.config, [['note', `${step} ${NOTE}`]], `task-${step}`);
  const checkpoint: Checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(step),
    channel_values: { note: `${step} ${NOTE}`, count: step },
    channel_versions: { note: step, count: step },
  };
  cursor.config = await saver.put(cursor.config, checkpoint, { source: 'loop', step, parents: {} } as never, { note: step, count: step });
}

/** Writes `count` supersteps on each thread (unmeasured), as another saver instance would have. */
async function prefill(saver: BaseCheckpointSaver, threads: readonly string[], count: number): Promise<void> {
  await Promise.all(
    threads.map(async (thread) => {
      const cursor: Cursor = { config: { configurable: { thread_id: thread, checkpoint_ns: '' } }, step: 0 };
      for (let i = 0; i < count; i++) await superstep(saver, cursor);
    }),
  );
}

/** p-th percentile (nearest rank) of a non-empty sample. */
function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One measured round: every thread loads its newest checkpoint, then runs its supersteps; all threads at once. */
async function measure(saver: BaseCheckpointSaver, threads: readonly string[], steps: number) {
  const latencies: number[] = [];
  const start = performance.now();
  await Promise.all(
    threads.map(async (thread) => {
      const first = performance.now();
      const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: '' } });
      const cursor: Cursor = { config: tuple?.config ?? { configurable: { thread_id: thread, checkpoint_ns: '' } }, step: 1_000_000 };
      let at = first;
      for (let i = 0; i < steps; i++) {
        await superstep(saver, cursor);
        const now = performance.now();
        latencies.push(now - at);
        at = now;
      }
    }),
  );
  const wallMs = performance.now() - start;
  return { perSecond: (threads.length * steps) / (wallMs / 1000), p99: percentile(latencies, 99), p50: percentile(latencies, 50) };
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

async function cellRows(peers: Peers, cell: Cell): Promise<BenchRow[]> {
  const steps = Math.max(6, Math.ceil(SUPERSTEPS / cell.threads));
  const sets: Record<Mode, string[]> = { savepoint: [], langgraph: [] };
  const tag = `c${++tags}`;
  for (const mode of ['savepoint', 'langgraph'] as Mode[]) {
    sets[mode] = Array.from({ length: cell.threads }, (_, t) => `${tag}-${mode}-${t}`);
    // Long threads are filled once, by another saver instance, and reused by every round (each adds a few).
    if (cell.history > 0) await prefill(saverOf(mode, peers, cell.keepLast, true), sets[mode], cell.history);
  }
  const results: Record<Mode, { perSecond: number; p99: number; p50: number }[]> = { savepoint: [], langgraph: [] };
  // Savepoint's statements per superstep, its first getTuple included (each write statement is a commit).
  let statements = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const mode of (r % 2 === 0 ? ['savepoint', 'langgraph'] : ['langgraph', 'savepoint']) as Mode[]) {
      const threads = cell.history > 0 ? sets[mode] : sets[mode].map((t) => `${t}-r${r}`);
      const before = peers.storage.stats().roundTrips;
      results[mode].push(await measure(saverOf(mode, peers, cell.keepLast), threads, steps));
      if (mode === 'savepoint') statements += peers.storage.stats().roundTrips - before;
    }
  }
  const m = (mode: Mode, what: 'perSecond' | 'p99' | 'p50'): number => median(results[mode].map((x) => x[what]));
  const what = `${cell.threads} thread${cell.threads > 1 ? 's' : ''}, ${cell.history === 0 ? 'new' : `${fmt(cell.history)} checkpoints long`}, keepLast ${cell.keepLast}`;
  process.stderr.write(
    `  ${what}: ${fmt(m('savepoint', 'perSecond'))} vs ${fmt(m('langgraph', 'perSecond'))} supersteps/s; p99 ${fmt(m('savepoint', 'p99'))} vs ${fmt(m('langgraph', 'p99'))} ms; savepoint ${fmt(statements / (ROUNDS * cell.threads * steps))} statements/superstep\n`,
  );
  const name = `SavepointSaver vs PostgresSaver, one pool, ${what}`;
  if (cell.threads === 1) {
    const ratio = m('savepoint', 'p50') / m('langgraph', 'p50');
    return [
      {
        area: 'langgraph',
        name: `${name}: superstep latency (median)`,
        savepoint: `${fmt(m('savepoint', 'p50'))} ms`,
        baseline: `${fmt(m('langgraph', 'p50'))} ms`,
        ratio: `${fmt(ratio)}×`,
        target: '≤ 1.0×',
        met: ratio <= 1,
      },
    ];
  }
  const rate = m('savepoint', 'perSecond') / m('langgraph', 'perSecond');
  const p99 = m('savepoint', 'p99') / m('langgraph', 'p99');
  const rows: BenchRow[] = [
    {
      area: 'langgraph',
      name: `${name}: supersteps/s`,
      savepoint: `${fmt(m('savepoint', 'perSecond'))}/s`,
      baseline: `${fmt(m('langgraph', 'perSecond'))}/s`,
      ratio: `${fmt(rate)}×`,
      target: '≥ 1.5×',
      met: rate >= 1.5,
    },
  ];
  rows.push({
    area: 'langgraph',
    name: `${name}: p99 superstep latency`,
    savepoint: `${fmt(m('savepoint', 'p99'))} ms`,
    baseline: `${fmt(m('langgraph', 'p99'))} ms`,
    ratio: `${fmt(p99)}×`,
    target: cell.threads >= 64 ? '≤ 1.0×' : '—',
    met: cell.threads < 64 || p99 <= 1,
  });
  return rows;
}

export async function bench(): Promise<BenchRow[]> {
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
    for (const cell of cellsWanted()) rows.push(...(await cellRows(peers, cell)));
    return rows;
  } finally {
    await peers.storage.close();
    await peers.fillStorage.close();
    await pool.end();
    await fillPool.end();
    await server.destroy();
  }
}
