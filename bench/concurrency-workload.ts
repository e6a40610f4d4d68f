/**
 * The workload of the langgraph-concurrency bench, whichever store it runs on: LangGraph
 * supersteps on many threads of one process at once, and the rows made from two savers'
 * rounds (supersteps per second, p99 latency; the one-thread row: median latency).
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { fmt, median, type BenchRow } from './harness.js';

/**
 * One row of the matrix: the store (`writer`: savepoint's writer on PostgreSQL, see
 * langgraph-concurrency-writer.ts), threads at once, checkpoints each thread holds before, the saver's bound.
 */
export interface Cell {
  readonly store: 'pg' | 'fs' | 'writer';
  readonly threads: number;
  readonly history: number;
  readonly keepLast: number | false;
}

/**
 * Cells from a spec such as `1x0,8x100,64x100x50,fs:8x100,writer:8x100` (`[store:]threads x history
 * [x keepLast]`, PostgreSQL when no store is named).
 */
export function parseCells(spec: string): Cell[] {
  return spec.split(',').map((s) => {
    const [store, dims] = s.includes(':') ? (s.split(':') as [string, string]) : ['pg', s];
    if (store !== 'pg' && store !== 'fs' && store !== 'writer')
      throw new Error(`BENCH_LGC_CELLS: unknown store "${store}" in "${s}" (pg, fs or writer)`);
    const [threads, history, keep] = dims.split('x').map(Number);
    if (!Number.isInteger(threads) || threads! < 1 || !Number.isInteger(history) || history! < 0)
      throw new Error(`BENCH_LGC_CELLS: "${s}" is not [store:]threads x history [x keepLast]`);
    return { store, threads: threads!, history: history!, keepLast: keep ? keep : false };
  });
}

/** The cell in words, as the rows name it. */
export function describeCell(cell: Cell): string {
  const threads = `${cell.threads} thread${cell.threads > 1 ? 's' : ''}`;
  return `${threads}, ${cell.history === 0 ? 'new' : `${fmt(cell.history)} checkpoints long`}, keepLast ${cell.keepLast}`;
}

/** Supersteps each thread runs in a round, for `total` shared by the cell's threads (at least 6 each). */
export const stepsPerThread = (cell: Cell, total: number): number => Math.max(6, Math.ceil(total / cell.threads));

const NOTE = 'x'.repeat(1000);

/** The state of one thread as the loop carries it. */
export interface Cursor {
  config: RunnableConfig;
  step: number;
}

/** One superstep on `saver`: the task's writes under the current checkpoint, then the next checkpoint. */
export async function superstep(saver: BaseCheckpointSaver, cursor: Cursor): Promise<void> {
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
export async function prefill(saver: BaseCheckpointSaver, threads: readonly string[], count: number): Promise<void> {
  await Promise.all(
    threads.map(async (thread) => {
      const cursor: Cursor = { config: { configurable: { thread_id: thread, checkpoint_ns: '' } }, step: 0 };
      for (let i = 0; i < count; i++) await superstep(saver, cursor);
    }),
  );
}

/** p-th percentile (nearest rank) of a non-empty sample. */
export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** One round's figures: supersteps per second over all threads, and the supersteps' latency (ms). */
export interface Measured {
  readonly perSecond: number;
  readonly p99: number;
  readonly p50: number;
}

/** One measured round: every thread loads its newest checkpoint, then runs its supersteps; all threads at once. */
export async function measure(saver: BaseCheckpointSaver, threads: readonly string[], steps: number): Promise<Measured> {
  const latencies: number[] = [];
  const start = performance.now();
  await Promise.all(
    threads.map(async (thread) => {
      const first = performance.now();
      const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: '' } });
      // Versions go on from the thread's newest checkpoint, as LangGraph's loop does: restarting them
      // would make PostgresSaver's blob inserts of a long thread conflicts that write nothing.
      const step = Number(tuple?.checkpoint.channel_versions['count'] ?? 0);
      const cursor: Cursor = { config: tuple?.config ?? { configurable: { thread_id: thread, checkpoint_ns: '' } }, step };
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

/** Unmeasured rounds each saver runs before a cell's measured rounds (see {@link warmUp}). */
export const WARM_UP_ROUNDS = Number(process.env.BENCH_LGC_WARMUP ?? 8);

/**
 * Unmeasured rounds before a cell's measured rounds, where the rows are about a service in its
 * steady state. A process's first rounds measure V8 compiling the saver's code (a warm
 * superstep's CPU is about half a cold one's) and, on PostgreSQL, the server planning each pooled
 * connection's first five linked reads for their parameters before it keeps one plan. V8's part
 * is the larger: plans forced generic from the first read moved nothing. Measured from the first
 * round, savepoint's client CPU a superstep settled after seven or eight rounds, PostgresSaver's
 * after three (bench/LOG.md). Each saver gets as many. New threads are warmed on threads of their
 * own; `long` threads (already written) on themselves, since a new thread never takes their path
 * (a thread at its `keepLast` bound lets a checkpoint go each superstep; a new one of a round's
 * length never reaches it).
 */
export async function warmUp(
  makeSaver: () => BaseCheckpointSaver,
  threads: readonly string[],
  steps: number,
  long: boolean,
): Promise<void> {
  for (let r = 0; r < WARM_UP_ROUNDS; r++) await measure(makeSaver(), long ? threads : threads.map((t) => `${t}-warm${r}`), steps);
}

/** Each round's ratio of savepoint's figure to its peer's in the same round (rounds in order), for the progress line. */
export function roundRatios(results: CellResults, of: (m: Measured) => number): string {
  return results.savepoint.map((m, r) => fmt(of(m) / of(results.peer[r]!))).join(', ');
}

/** Every round of a cell, savepoint's and its peer's. */
export interface CellResults {
  readonly savepoint: Measured[];
  readonly peer: Measured[];
}

/** Medians of a cell's rounds. */
export function mediansOf(results: CellResults): Record<keyof CellResults, Measured> {
  const m = (rounds: Measured[]): Measured => ({
    perSecond: median(rounds.map((x) => x.perSecond)),
    p99: median(rounds.map((x) => x.p99)),
    p50: median(rounds.map((x) => x.p50)),
  });
  return { savepoint: m(results.savepoint), peer: m(results.peer) };
}

/**
 * A cell's rows, ratios of medians: one thread, the median superstep latency (≤ 1.0×); more,
 * supersteps per second (≥ 1.5×) and the p99 latency (≤ 1.0× at 64 threads and more, else reported).
 */
export function cellRows(name: string, cell: Cell, results: CellResults, peerNote = ''): BenchRow[] {
  const m = mediansOf(results);
  if (cell.threads === 1) {
    const ratio = m.savepoint.p50 / m.peer.p50;
    return [
      {
        area: 'langgraph',
        name: `${name}: superstep latency (median)`,
        savepoint: `${fmt(m.savepoint.p50)} ms`,
        baseline: `${fmt(m.peer.p50)} ms${peerNote}`,
        ratio: `${fmt(ratio)}×`,
        target: '≤ 1.0×',
        met: ratio <= 1,
      },
    ];
  }
  const rate = m.savepoint.perSecond / m.peer.perSecond;
  const p99 = m.savepoint.p99 / m.peer.p99;
  return [
    {
      area: 'langgraph',
      name: `${name}: supersteps/s`,
      savepoint: `${fmt(m.savepoint.perSecond)}/s`,
      baseline: `${fmt(m.peer.perSecond)}/s${peerNote}`,
      ratio: `${fmt(rate)}×`,
      target: '≥ 1.5×',
      met: rate >= 1.5,
    },
    {
      area: 'langgraph',
      name: `${name}: p99 superstep latency`,
      savepoint: `${fmt(m.savepoint.p99)} ms`,
      baseline: `${fmt(m.peer.p99)} ms${peerNote}`,
      ratio: `${fmt(p99)}×`,
      target: cell.threads >= 64 ? '≤ 1.0×' : '—',
      met: cell.threads < 64 || p99 <= 1,
    },
  ];
}
