/**
 * The writer cells of the langgraph-concurrency bench (`writer:` in a cell spec): savepoint's
 * writer (`createWriter` with `defaultProfile`, as users make it: its run lease, its defaults) on
 * `postgresStorage`, one checkpoint of a ~1 KB state a step, beside PostgresSaver's superstep
 * (`putWrites` + `put` of the same state), both on the same `pg.Pool` of one server, many runs of
 * one process at once. A cell's `keepLast` is the writer's automatic retention: given (50, the
 * default profile's keep-last), `autoRetention` at its default (on); absent, `autoRetention: false`.
 *
 * Each round makes new writers, as a restarted service does: a run's first checkpoint is timed from
 * its `open()` (the run lease taken, the run's last sequence learned), as a saver's first superstep
 * is timed from its `getTuple`. The round's wall time ends at the last checkpoint; the writers
 * close after it.
 */
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { createWriter, defaultProfile, type JsonValue, type StorageAdapter } from 'savepoint';
import { fmt, type BenchRow } from './harness.js';
import {
  cellRows,
  measure,
  mediansOf,
  percentile,
  prefill,
  roundRatios,
  stepsPerThread,
  WARM_UP_ROUNDS,
  type Cell,
  type CellResults,
  type Measured,
} from './concurrency-workload.js';

const NOTE = 'x'.repeat(1000);
const payloadAt = (step: number): JsonValue => ({ step, note: `${step} ${NOTE}` });

/** What a writer cell runs on: the measured store, the prefill's (no durability wait) and the peer saver's factory. */
export interface WriterPeers {
  readonly storage: StorageAdapter & { stats(): { roundTrips: number } };
  readonly fillStorage: StorageAdapter;
  readonly peer: (fill: boolean) => BaseCheckpointSaver;
}

/** The writer of run `runId` as the cell makes it (see the file's comment for `keepLast`). */
function writerOf(storage: StorageAdapter, cell: Cell, runId: string) {
  return createWriter({ storage, profile: defaultProfile, runId, ...(cell.keepLast === false ? { autoRetention: false } : {}) });
}

/** `count` checkpoints on each run, one after another on each, all runs at once (unmeasured), as an earlier writer left them. */
async function prefillRuns(storage: StorageAdapter, cell: Cell, runs: readonly string[], count: number): Promise<void> {
  await Promise.all(
    runs.map(async (runId) => {
      const writer = writerOf(storage, cell, runId);
      for (let i = 1; i <= count; i++) {
        const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payloadAt(i) });
        if (!r.ok) throw r.error;
      }
      await writer.close();
    }),
  );
}

/** One measured round: a new writer a run, opened, then `steps` checkpoints; all runs at once. */
async function measureWriters(
  storage: StorageAdapter,
  cell: Cell,
  runs: readonly string[],
  steps: number,
): Promise<Measured & { readonly closeMs: number }> {
  const latencies: number[] = [];
  const writers = runs.map((runId) => writerOf(storage, cell, runId));
  const start = performance.now();
  let end = start;
  // The closes are not timed in the round (PostgresSaver has none), only reported: a writer that
  // opened a run from latest alone reads the run's index there, before completing it.
  let closeMs: number;
  try {
    await Promise.all(
      writers.map(async (writer) => {
        let at = performance.now();
        const opened = await writer.open();
        if (!opened.ok) throw opened.error;
        let step = opened.lastSequence;
        for (let i = 0; i < steps; i++) {
          const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payloadAt(++step) });
          if (!r.ok) throw r.error;
          const now = performance.now();
          latencies.push(now - at);
          at = now;
        }
        end = Math.max(end, at);
      }),
    );
  } finally {
    const closing = performance.now();
    await Promise.all(writers.map((w) => w.close()));
    closeMs = performance.now() - closing;
  }
  return {
    perSecond: (runs.length * steps) / ((end - start) / 1000),
    p99: percentile(latencies, 99),
    p50: percentile(latencies, 50),
    closeMs,
  };
}

/** The cell in words: runs, their length, the writer's automatic retention. */
export function describeWriterCell(cell: Cell): string {
  const runs = `${cell.threads} run${cell.threads > 1 ? 's' : ''}`;
  const length = cell.history === 0 ? 'new' : `${fmt(cell.history)} checkpoints long`;
  return `${runs}, ${length}, autoRetention ${cell.keepLast === false ? 'off' : 'on'}`;
}

let tags = 0;

/** A writer cell's rows: warm-up, then `rounds` measured rounds of each side, alternating. */
export async function writerCellRows(peers: WriterPeers, cell: Cell, rounds: number, supersteps: number): Promise<BenchRow[]> {
  if (cell.keepLast !== false && cell.keepLast !== 50)
    throw new Error(`langgraph-concurrency bench: a writer cell keeps the default profile's 50 or none, not ${cell.keepLast}`);
  const steps = stepsPerThread(cell, supersteps);
  const tag = `w${++tags}`;
  const runs = Array.from({ length: cell.threads }, (_, t) => `${tag}-writer-${t}`);
  const threads = Array.from({ length: cell.threads }, (_, t) => `${tag}-peer-${t}`);
  if (cell.history > 0) {
    await prefillRuns(peers.fillStorage, cell, runs, cell.history);
    await prefill(peers.peer(true), threads, cell.history);
  }
  const long = cell.history > 0;
  for (let r = 0; r < WARM_UP_ROUNDS; r++) {
    await measureWriters(peers.storage, cell, long ? runs : runs.map((t) => `${t}-warm${r}`), steps);
    await measure(peers.peer(false), long ? threads : threads.map((t) => `${t}-warm${r}`), steps);
  }
  const results: CellResults = { savepoint: [], peer: [] };
  const closes: number[] = [];
  let statements = 0;
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? (['writer', 'peer'] as const) : (['peer', 'writer'] as const)) {
      if (side === 'writer') {
        const before = peers.storage.stats().roundTrips;
        const measured = await measureWriters(peers.storage, cell, long ? runs : runs.map((t) => `${t}-r${r}`), steps);
        results.savepoint.push(measured);
        closes.push(measured.closeMs);
        statements += peers.storage.stats().roundTrips - before;
      } else results.peer.push(await measure(peers.peer(false), long ? threads : threads.map((t) => `${t}-r${r}`), steps));
    }
  }
  const m = mediansOf(results);
  const what = describeWriterCell(cell);
  process.stderr.write(
    `  writer ${what}: ${fmt(m.savepoint.perSecond)} checkpoints/s vs ${fmt(m.peer.perSecond)} supersteps/s; p99 ${fmt(m.savepoint.p99)} vs ${fmt(m.peer.p99)} ms; writer ${fmt(statements / (rounds * cell.threads * steps))} statements/checkpoint (open and close included); closes ${fmt(percentile(closes, 50))} ms a round (untimed); rounds ${roundRatios(results, cell.threads === 1 ? (x) => x.p50 : (x) => x.perSecond)}\n`,
  );
  return cellRows(`writer.checkpoint vs PostgresSaver's superstep, one pool, ${what}`, cell, results);
}
