/**
 * LangGraph bench: one graph, per superstep, through SavepointSaver against LangGraph's own
 * savers in the same process, interleaved (ratios of medians): on memory against
 * MemorySaver, on fs against SqliteSaver (its default, WAL with synchronous=NORMAL, and
 * synchronous=FULL, the durability fsStorage gives). Then the storage footprint of one
 * thread after 1,000 supersteps: SavepointSaver with its default retention (keep the last
 * 50) against SqliteSaver, which keeps everything.
 *
 * Where the fs stores and SQLite's databases go: LANGGRAPH_BENCH_DIR (default the OS's
 * temporary directory). Each file savepoint writes is a new inode and SQLite makes none, so
 * the fs rows depend on what a file creation costs there: on an ext4 without a journal it
 * grows with the inodes deleted in the last minutes near the directory's (see
 * docs/storage.md, "What a file creation costs decides the fs rows"). The row "file creation in the bench's
 * directory" reports that cost next to the fs rows.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  MemorySaver,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type PendingWrite,
} from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from './sqlite-peer.js';
import { memoryStorage } from '../src/index.js';
import { fsStorage } from '../src/entries/fs.js';
import { SavepointSaver } from '../src/entries/langgraph.js';
import { creationCostUs } from './creation-cost.js';
import { fmt, interleave, median, type BenchRow } from './harness.js';

const STEPS = 20;
const FOOTPRINT_STEPS = 1000;

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (_, n) => n, default: () => 0 }),
  note: Annotation<string>({ reducer: (_, n) => n, default: () => '' }),
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b].slice(-8), default: () => [] }),
});

/** A loop of `steps` supersteps: each changes every channel, about 1 KB of state. */
function graph(steps: number) {
  return new StateGraph(State)
    .addNode('step', (s: typeof State.State) => ({
      count: s.count + 1,
      note: `step ${s.count + 1} `.repeat(60),
      log: [`did ${s.count + 1}`],
    }))
    .addEdge(START, 'step')
    .addConditionalEdges('step', (s) => (s.count >= steps ? END : 'step'), ['step', END]);
}

let threads = 0;
async function runThread(checkpointer: BaseCheckpointSaver, steps: number): Promise<void> {
  const app = graph(steps).compile({ checkpointer });
  await app.invoke({ count: 0 }, { configurable: { thread_id: `t-${++threads}` }, recursionLimit: steps + 10 });
}

type SaverCall =
  | { readonly op: 'put'; readonly args: Parameters<BaseCheckpointSaver['put']> }
  | { readonly op: 'putWrites'; readonly args: Parameters<BaseCheckpointSaver['putWrites']> };

/** A `MemorySaver` that also records the put and putWrites calls the graph makes (copies of their data: LangGraph may reuse its objects). */
class RecordingSaver extends MemorySaver {
  readonly calls: SaverCall[] = [];
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions = {}) {
    this.calls.push({ op: 'put', args: structuredClone([{ configurable: config.configurable }, checkpoint, metadata, newVersions]) });
    return super.put(config, checkpoint, metadata);
  }
  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string) {
    this.calls.push({ op: 'putWrites', args: structuredClone([{ configurable: config.configurable }, writes, taskId, taskPath]) });
    return super.putWrites(config, writes, taskId);
  }
}

/**
 * The graph's calls replayed on `saver` for a new thread, without LangGraph around them: the
 * saver's own cost per superstep (getTuple once, then put and putWrites as the graph makes
 * them). The arguments are copied before the clock starts.
 */
function replayer(calls: readonly SaverCall[], saver: () => BaseCheckpointSaver, threadsPerStore: number): () => Promise<void> {
  let current = saver();
  let replays = 0;
  return async () => {
    // A fresh saver and store every `threadsPerStore` threads (the graph rows' stores hold about 40).
    if (++replays % threadsPerStore === 0) current = saver();
    const thread = `r-${++threads}`;
    const copies = calls.map((c) => ({ op: c.op, args: structuredClone(c.args) }));
    for (const c of copies) (c.args[0].configurable as Record<string, unknown>).thread_id = thread;
    const start = performance.now();
    await current.getTuple({ configurable: { thread_id: thread } });
    for (const c of copies) {
      if (c.op === 'put') await current.put(...(c.args as Parameters<BaseCheckpointSaver['put']>));
      else await current.putWrites(...(c.args as Parameters<BaseCheckpointSaver['putWrites']>));
    }
    elapsed = performance.now() - start;
  };
}
let elapsed = 0;

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += statSync(join(e.parentPath, e.name)).size;
  }
  return total;
}

function sqlite(dir: string, synchronous?: 'FULL'): SqliteSaver {
  const saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'));
  if (synchronous) saver.db.pragma(`synchronous = ${synchronous}`);
  return saver;
}

function perStepRow(
  area: string,
  name: string,
  times: { a: number[]; b: number[] },
  baseline: string,
  target: number | undefined,
): BenchRow {
  const a = median(times.a) / STEPS;
  const b = median(times.b) / STEPS;
  const ratio = a / b;
  return {
    area,
    name,
    savepoint: `${fmt(a)} ms/superstep`,
    baseline: `${fmt(b)} ms/superstep (${baseline})`,
    ratio: `${fmt(ratio)}× of baseline`,
    target: target === undefined ? '— (reported)' : `≤ ${target}×`,
    met: target === undefined ? true : ratio <= target,
  };
}

/** SavepointSaver on memoryStorage against MemorySaver, the whole graph. */
async function memoryRow(): Promise<BenchRow> {
  // Warm both paths (module loading, JIT) before measuring.
  await runThread(new SavepointSaver({ storage: memoryStorage() }), STEPS);
  await runThread(new MemorySaver(), STEPS);
  const memSaver = new SavepointSaver({ storage: memoryStorage() });
  const memBaseline = new MemorySaver();
  return perStepRow(
    'langgraph',
    `SavepointSaver(memoryStorage) vs MemorySaver, ${STEPS}-superstep graph`,
    await interleave(
      40,
      () => runThread(memSaver, STEPS),
      () => runThread(memBaseline, STEPS),
    ),
    'MemorySaver',
    1.0,
  );
}

/** `saver` with its put and putWrites timed: each call's synchronous part pushed to `out`. */
function timedCalls(saver: BaseCheckpointSaver, out: number[]): BaseCheckpointSaver {
  for (const method of ['put', 'putWrites'] as const) {
    const call = (saver[method] as (...args: unknown[]) => Promise<unknown>).bind(saver);
    (saver as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      const start = performance.now();
      const result = call(...args);
      out.push(performance.now() - start);
      return result;
    };
  }
  return saver;
}

/**
 * The savers' own calls inside the graph: each call's synchronous part, timed around the
 * call (savepoint on memoryStorage does all of a put there; MemorySaver's last step, after
 * its serializer's promises, is left out, in its favour). Replayed alone (the rows below)
 * the same calls cost about half: back to back, in warm caches. Inside the graph each runs
 * after LangGraph's own code, and whichever call comes first pays the cold caches — with
 * cloned or live arguments alike.
 */
async function callsInGraphRow(): Promise<BenchRow> {
  const own = { a: [] as number[], b: [] as number[] };
  let ours = timedCalls(new SavepointSaver({ storage: memoryStorage() }), []);
  let theirs = timedCalls(new MemorySaver(), []);
  for (let i = 0; i < 120; i++) {
    if (i % 40 === 0) {
      ours = timedCalls(new SavepointSaver({ storage: memoryStorage() }), i >= 40 ? own.a : []);
      theirs = timedCalls(new MemorySaver(), i >= 40 ? own.b : []);
    }
    for (const saver of i % 2 ? [ours, theirs] : [theirs, ours]) await runThread(saver, STEPS);
  }
  // Per superstep: the mean call (the slowest 0.5 % left out: a descheduled process) times the calls a superstep makes.
  const perStep = (calls: number[]): number => {
    const kept = [...calls].sort((x, y) => x - y).slice(0, Math.floor(calls.length * 0.995));
    return (kept.reduce((x, y) => x + y, 0) / kept.length) * (calls.length / (80 * STEPS)) * 1000;
  };
  const a = perStep(own.a);
  const b = perStep(own.b);
  return {
    area: 'langgraph',
    name: `put + putWrites inside the graph (each call's synchronous part, 80 threads each, interleaved): SavepointSaver(memoryStorage) vs MemorySaver`,
    savepoint: `${fmt(a)} µs/superstep`,
    baseline: `${fmt(b)} µs/superstep (MemorySaver)`,
    ratio: `${fmt(a / b)}× of baseline`,
    target: '— (reported)',
    met: true,
  };
}

/**
 * The saver's own cost: the graph's put and putWrites calls replayed without LangGraph, in a
 * store of about 40 threads (as the graph rows) and in one that keeps all 400 (a server's
 * store: a new thread's keys land between older threads' in listing order).
 */
async function replayRows(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const recorder = new RecordingSaver();
  await runThread(recorder, STEPS);
  const puts = recorder.calls.filter((c) => c.op === 'put').length;
  for (const threadsPerStore of [40, 100_000]) {
    const savepointReplay = replayer(recorder.calls, () => new SavepointSaver({ storage: memoryStorage() }), threadsPerStore);
    const memoryReplay = replayer(recorder.calls, () => new MemorySaver(), threadsPerStore);
    const own = { a: [] as number[], b: [] as number[] };
    for (let i = 0; i < 400; i++) {
      const pair = [
        [savepointReplay, own.a],
        [memoryReplay, own.b],
      ] as const;
      for (const [run, out] of i % 2 ? pair : [...pair].reverse()) {
        await run();
        if (i >= 40) out.push(elapsed);
      }
    }
    const ownA = (median(own.a) / puts) * 1000;
    const ownB = (median(own.b) / puts) * 1000;
    rows.push({
      area: 'langgraph',
      name: `put + putWrites alone (the graph's calls replayed, no LangGraph), ${threadsPerStore === 40 ? '40 threads a store' : 'one store of 400 threads'}: SavepointSaver(memoryStorage) vs MemorySaver`,
      savepoint: `${fmt(ownA)} µs/superstep`,
      baseline: `${fmt(ownB)} µs/superstep (MemorySaver)`,
      ratio: `${fmt(ownA / ownB)}× of baseline`,
      target: '— (reported)',
      met: true,
    });
  }
  return rows;
}

/**
 * fsStorage as users make it (a new directory the saver declares for: the packed layout), and
 * the file layout's two modes: direct (the spec's per-file order, two fsyncs per file) and the
 * write-ahead journal (one fdatasync per commit), each beside SQLite's two settings.
 */
async function fsRows(work: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const fsMode of ['default', 'direct', 'journal'] as const) {
    const dir = join(work, `fs-${fsMode}`);
    const fsStore = fsMode === 'default' ? fsStorage({ dir }) : fsStorage({ dir, journal: fsMode === 'journal' });
    const fsSaver = new SavepointSaver({ storage: fsStore });
    const mode = { default: 'fsStorage (default: packed)', direct: 'fsStorage direct (journal: false)', journal: 'fsStorage (journal)' }[
      fsMode
    ];
    for (const [label, sync, target] of [
      ['SqliteSaver default (WAL, synchronous=NORMAL)', undefined, undefined],
      ['SqliteSaver synchronous=FULL', 'FULL', 1.5],
    ] as const) {
      const baseline = sqlite(mkdtempSync(join(work, 'sqlite-')), sync);
      await runThread(baseline, 2);
      await runThread(fsSaver, 2);
      rows.push(
        perStepRow(
          'langgraph',
          `SavepointSaver(${mode}) vs ${label}`,
          await interleave(
            10,
            () => runThread(fsSaver, STEPS),
            () => runThread(baseline, STEPS),
          ),
          label,
          target,
        ),
      );
      baseline.db.close();
    }
    await fsStore.close();
  }
  return rows;
}

/** Footprint: one thread, 1,000 supersteps, each store on its own. */
async function footprintRow(work: string): Promise<BenchRow> {
  const fpFs = join(work, 'footprint-fs');
  const fpStore = fsStorage({ dir: fpFs, layout: 'files' });
  // keepLast: 50, as this row has always measured it (the saver keeps every checkpoint by default; bench/dedup.ts measures that).
  await runThread(new SavepointSaver({ storage: fpStore, keepLast: 50 }), FOOTPRINT_STEPS);
  await fpStore.close();
  const fpSqliteDir = mkdtempSync(join(work, 'footprint-sqlite-'));
  const fpSqlite = sqlite(fpSqliteDir);
  await runThread(fpSqlite, FOOTPRINT_STEPS);
  fpSqlite.db.close();
  const ours = dirBytes(fpFs);
  const theirs = dirBytes(fpSqliteDir);
  return {
    area: 'langgraph',
    name: `store size after ${FOOTPRINT_STEPS} supersteps (keepLast: 50) vs SqliteSaver`,
    savepoint: `${fmt(ours / 1024)} KiB`,
    baseline: `${fmt(theirs / 1024)} KiB (SqliteSaver)`,
    ratio: `${fmt(ours / theirs)}× of baseline`,
    target: '≤ 0.1×',
    met: ours / theirs <= 0.1,
  };
}

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const work = mkdtempSync(join(process.env.LANGGRAPH_BENCH_DIR ?? tmpdir(), 'savepoint-bench-lg-'));
  try {
    rows.push(await memoryRow(), await callsInGraphRow(), ...(await replayRows()));
    const creationBefore = creationCostUs(work, 'before');
    rows.push(...(await fsRows(work)));
    rows.push({
      area: 'langgraph',
      name: `file creation in the bench's directory, before / after the fs rows (the kernel's share of each file a checkpoint writes on fs; SQLite creates none)`,
      savepoint: `${fmt(creationBefore)} / ${fmt(creationCostUs(work, 'after'))} µs/file`,
      baseline: '—',
      ratio: '—',
      target: '— (reported)',
      met: true,
    });
    rows.push(await footprintRow(work));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}
