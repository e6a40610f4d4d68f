/**
 * fs vs SQLite bench: savepoint's durable checkpoint on fsStorage against
 * LangGraph's SqliteSaver (better-sqlite3) with `PRAGMA synchronous=FULL` in WAL mode (the
 * journal mode SqliteSaver sets itself), same process, interleaved, ratios of medians.
 *
 * - single run: one writer.checkpoint() (defaultProfile, 1 KB state: history + latest + index,
 *   fenced by the run's lease when the writer holds one) vs one SqliteSaver.put() of the same
 *   state (put only: putWrites stores pending task writes, which a savepoint checkpoint has
 *   no counterpart for). Target: fs ≤ 1.5× SQLite's latency.
 * - the adapter alone: one fsStorage batch of the three keys a checkpoint writes (journal), or
 *   three durable puts (direct), vs SqliteSaver.put — separates fsStorage's cost from the
 *   writer's own CPU.
 * - 8 concurrent runs on one adapter: checkpoints/s vs 8 concurrent SqliteSaver threads on
 *   one database (target ≥ 1.0×), and the event loop's p99 delay over all rounds' fs load
 *   (monitorEventLoopDelay; target ≤ 5 ms).
 * Each for `fsStorage({ dir })` as users make it (`default`: a new directory the writer declares
 * for, the packed layout; the adapter-alone row declares as the writer does), and for the file
 * layout's journal and direct mode.
 * Sample counts: FS_PEERS_SAMPLES (default 150), FS_PEERS_ROUNDS (default 5). Where the
 * stores and databases go: FS_PEERS_DIR (default the OS's temporary directory) — creating a
 * file (a new inode, one per file savepoint writes; SQLite creates none per commit) costs
 * several times more in some directories of a busy file system than in others (see
 * docs/performance.md, "The fs journal, step by step").
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram, monitorEventLoopDelay, type RecordableHistogram } from 'node:perf_hooks';
import { SqliteSaver } from './sqlite-peer.js';
import { createWriter, defaultProfile, type JsonValue } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { fmt, median, timeMs, type BenchRow } from './harness.js';
import { threadCpuMeter, totalMs, type Cpu, type ThreadCpu } from './thread-cpu.js';

const SAMPLES = Number(process.env.FS_PEERS_SAMPLES ?? 150);
const ROUNDS = Number(process.env.FS_PEERS_ROUNDS ?? 5);
const RUNS = 8;
const PER_RUN = 25;
const payload1k = (i: number): JsonValue => ({ step: i, note: 'x'.repeat(1000) });
const bytes1k = (i: number): Uint8Array => new TextEncoder().encode(JSON.stringify({ step: i, sequence: i + 1, state: payload1k(i) }));

function sqlite(path: string): SqliteSaver {
  const saver = SqliteSaver.fromConnString(path);
  // WAL is what SqliteSaver sets up; FULL fsyncs the WAL on every commit.
  const db = saver.db;
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return saver;
}

let checkpointIds = 0;
async function sqlitePut(saver: SqliteSaver, thread: string, i: number): Promise<void> {
  const id = `${String(checkpointIds++).padStart(12, '0')}-${randomUUID()}`;
  await saver.put(
    { configurable: { thread_id: thread, checkpoint_ns: '' } },
    {
      v: 4,
      id,
      ts: new Date().toISOString(),
      channel_values: { state: payload1k(i) },
      channel_versions: { state: i + 1 },
      versions_seen: {},
    },
    { source: 'loop', step: i, parents: {} },
    {},
  );
}

/** Times single operations of the contenders, rotating their order each sample. */
async function rotate(samples: number, fns: readonly ((i: number) => Promise<void>)[]): Promise<number[][]> {
  const times = fns.map(() => [] as number[]);
  for (let i = 0; i < samples + 5; i++) {
    for (let k = 0; k < fns.length; k++) {
      const which = (i + k) % fns.length;
      const t = await timeMs(() => fns[which]!(i));
      if (i >= 5) times[which]!.push(t);
    }
  }
  return times;
}

function latencyRow(name: string, ours: number[], theirs: number[], target: number): BenchRow {
  const a = median(ours);
  const b = median(theirs);
  const ratio = a / b;
  return {
    area: 'fs-peers',
    name,
    savepoint: `${fmt(a)} ms`,
    baseline: `${fmt(b)} ms (SqliteSaver.put, synchronous=FULL)`,
    ratio: `${ratio.toFixed(2)}× of SQLite's latency`,
    target: `≤ ${target.toFixed(2)}×`,
    met: ratio <= target,
  };
}

/** How the bench's store is made: as users make it (`default`), or the file layout's journal or direct mode. */
type Mode = 'default' | 'journal' | 'direct';
const MODES: readonly Mode[] = ['default', 'journal', 'direct'];

/** The store of `mode` in `dir`: `default` is `fsStorage({ dir })` declared as the writer declares (only savepoint reads it). */
function storeOf(mode: Mode, dir: string): FsStorage {
  if (mode !== 'default') return fsStorage({ dir, journal: mode === 'journal' });
  const storage = fsStorage({ dir });
  storage.declareReaders?.('savepoint');
  return storage;
}

const modeName = (mode: Mode): string => (mode === 'default' ? 'default: packed' : mode);

async function single(base: string, mode: Mode): Promise<BenchRow[]> {
  const spStore = storeOf(mode, join(base, `sp-${mode}`));
  const writer = createWriter({ storage: spStore, profile: defaultProfile, runId: 'bench' });
  // The run lease is renewed by a write of its own today (being reworked in parallel: fencing
  // with a batch check); without it, the writer's cost is the checkpoint's files alone.
  const unleased = createWriter({ storage: spStore, profile: defaultProfile, runId: 'bench-unleased', lock: false });
  const adStore = storeOf(mode, join(base, `ad-${mode}`));
  const saver = sqlite(join(base, `single-${mode}.sqlite`));
  const adapterCheckpoint = async (i: number): Promise<void> => {
    const d = bytes1k(i);
    const history = `checkpoints/bench/history/cp_${i}.json`;
    if (mode !== 'direct') {
      await adStore.batch!([
        { type: 'put', key: history, bytes: d, ifAbsent: true },
        { type: 'put', key: 'checkpoints/bench/latest.json', bytes: d },
        { type: 'put', key: 'checkpoints/bench/index.json', bytes: d },
      ]);
    } else {
      await adStore.put(history, d, { ifAbsent: true });
      await adStore.put('checkpoints/bench/latest.json', d);
      await adStore.put('checkpoints/bench/index.json', d);
    }
  };
  const [w, wu, ad, sq] = await rotate(SAMPLES, [
    async (i) => {
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload1k(i) });
      if (!r.ok) throw r.error;
    },
    async (i) => {
      const r = await unleased.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload1k(i) });
      if (!r.ok) throw r.error;
    },
    adapterCheckpoint,
    (i) => sqlitePut(saver, 'bench', i),
  ]);
  await Promise.all([writer.close(), unleased.close()]);
  await Promise.all([spStore.close(), adStore.close()]);
  return [
    latencyRow(`fs (${modeName(mode)}) writer.checkpoint 1 KB (run lease on) vs SqliteSaver.put`, w!, sq!, 1.5),
    latencyRow(`fs (${modeName(mode)}) writer.checkpoint 1 KB (lock: false) vs SqliteSaver.put`, wu!, sq!, 1.5),
    latencyRow(`fs (${modeName(mode)}) adapter alone: the checkpoint's 3 keys vs SqliteSaver.put`, ad!, sq!, 1.5),
  ];
}

/** 8 runs each making PER_RUN checkpoints one after another, all 8 at once, on one adapter. */
async function concurrentFs(storage: FsStorage, round: number, lease: boolean): Promise<number> {
  const writers = Array.from({ length: RUNS }, (_, r) =>
    createWriter({ storage, profile: defaultProfile, runId: `run-${round}-${r}`, ...(lease ? {} : { lock: false }) }),
  );
  const ms = await timeMs(() =>
    Promise.all(
      writers.map(async (w) => {
        for (let i = 0; i < PER_RUN; i++) {
          const res = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload1k(i) });
          if (!res.ok) throw res.error;
        }
      }),
    ),
  );
  await Promise.all(writers.map((w) => w.close()));
  return ms;
}

async function concurrentSqlite(saver: SqliteSaver, round: number): Promise<number> {
  return timeMs(() =>
    Promise.all(
      Array.from({ length: RUNS }, async (_, r) => {
        for (let i = 0; i < PER_RUN; i++) await sqlitePut(saver, `run-${round}-${r}`, i);
      }),
    ),
  );
}

const perCheckpoint = (ms: number, checkpoints: number): string => `${fmt((ms * 1000) / checkpoints)} µs`;
const cpuText = (c: Cpu, checkpoints: number): string =>
  `${perCheckpoint(c.user + c.sys, checkpoints)} (kernel ${perCheckpoint(c.sys, checkpoints)})`;

/**
 * Where the CPU of the 8-run rows goes, per checkpoint (Linux only; see thread-cpu.ts): the
 * main thread, libuv's pool (the file-system calls) and V8's helpers (the optimizing
 * compiler, the concurrent collector), beside SqliteSaver's, whose put runs on the main
 * thread alone (better-sqlite3 is synchronous). Two cores give 2,000 ms of CPU a second:
 * a throughput of SQLite's needs savepoint's total per checkpoint under 2 s / SQLite's puts.
 */
function cpuRow(mode: string, ours: ThreadCpu | undefined, theirs: ThreadCpu | undefined, checkpoints: number): BenchRow[] {
  if (!ours || !theirs) return [];
  const a = totalMs(ours);
  const b = totalMs(theirs);
  return [
    {
      area: 'fs-peers',
      name: `fs (${mode}) ${RUNS} concurrent runs: CPU per checkpoint, by thread`,
      savepoint: `${perCheckpoint(a, checkpoints)}: main ${cpuText(ours.main, checkpoints)}, thread pool ${cpuText(ours.pool, checkpoints)}, V8 helpers ${cpuText(ours.v8, checkpoints)}`,
      baseline: `${perCheckpoint(b, checkpoints)} (SqliteSaver.put; main ${cpuText(theirs.main, checkpoints)})`,
      ratio: `${(a / b).toFixed(2)}× of SQLite's CPU`,
      target: '— (reported)',
      met: true,
    },
  ];
}

/**
 * The event loop's delay sampled every millisecond into one histogram over several spans (the
 * rounds' fs load), each span's first sample timed from its own start. `monitorEventLoopDelay`
 * cannot be that histogram: disabled and enabled again, it times its next sample from its last
 * one before, so the whole time between two spans would count as one turn.
 */
function loopDelaySpans(): { readonly histogram: RecordableHistogram; enable(): void; disable(): void } {
  const histogram = createHistogram();
  let timer: NodeJS.Timeout | undefined;
  let last = 0;
  return {
    histogram,
    enable() {
      last = performance.now();
      timer = setInterval(() => {
        const now = performance.now();
        histogram.record(Math.max(1, Math.round((now - last) * 1e6)));
        last = now;
      }, 1);
    },
    disable() {
      clearInterval(timer);
    },
  };
}

/** The event loop's p99 delay over `ms` of doing nothing: the machine's own noise, for scale. */
async function idleP99(ms: number): Promise<number> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await new Promise((r) => setTimeout(r, ms));
  h.disable();
  return h.percentile(99) / 1e6;
}

async function concurrent(base: string, storeMode: Mode, lease: boolean): Promise<BenchRow[]> {
  const mode = `${modeName(storeMode)}, ${lease ? 'run lease on' : 'lock: false'}`;
  const name = `${storeMode}-${lease ? 'l' : 'u'}`;
  const storage = storeOf(storeMode, join(base, `conc-${name}`));
  const saver = sqlite(join(base, `conc-${name}.sqlite`));
  const fsMs: number[] = [];
  const sqMs: number[] = [];
  const p99s: number[] = [];
  const idle: number[] = [];
  const fsCpu = threadCpuMeter();
  const sqCpu = threadCpuMeter();
  // One histogram over every round's fs load: a round lasts a tenth of a second or so (a sample a
  // millisecond), so a round's own p99 is its longest turn or two; the rounds together give the p99.
  const during = loopDelaySpans();
  await concurrentFs(storage, -1, lease); // warm up
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['fs', 'sq'] : ['sq', 'fs'];
    for (const which of order) {
      if (which === 'fs') {
        const h = monitorEventLoopDelay({ resolution: 1 });
        h.enable();
        during.enable();
        fsMs.push(await fsCpu.measure(() => concurrentFs(storage, round, lease)));
        during.disable();
        h.disable();
        p99s.push(h.percentile(99) / 1e6);
        idle.push(await idleP99(Math.min(2000, fsMs.at(-1)!)));
      } else sqMs.push(await sqCpu.measure(() => concurrentSqlite(saver, round)));
    }
  }
  await storage.close();
  const total = RUNS * PER_RUN;
  const a = (total * 1000) / median(fsMs);
  const b = (total * 1000) / median(sqMs);
  const p99 = during.histogram.percentile(99) / 1e6;
  const cpuRows = cpuRow(mode, fsCpu.total(), sqCpu.total(), total * ROUNDS);
  return [
    ...cpuRows,
    {
      area: 'fs-peers',
      name: `fs (${mode}) ${RUNS} concurrent runs: checkpoints/s vs SqliteSaver`,
      savepoint: `${fmt(a)} ops/s`,
      baseline: `${fmt(b)} ops/s (SqliteSaver.put ×${RUNS} runs)`,
      ratio: `${(a / b).toFixed(2)}× of SQLite's throughput`,
      target: '≥ 1.00×',
      met: a / b >= 1,
    },
    {
      area: 'fs-peers',
      name: `fs (${mode}) event-loop delay p99 during ${RUNS} concurrent runs`,
      savepoint: `${fmt(p99)} ms (${during.histogram.count} samples over ${ROUNDS} rounds, longest ${fmt(during.histogram.max / 1e6)} ms; each round's own p99, median: ${fmt(median(p99s))} ms)`,
      baseline: `${fmt(median(idle))} ms (same process idle, right after)`,
      ratio: '—',
      target: '≤ 5 ms',
      met: p99 <= 5,
    },
  ];
}

export async function bench(): Promise<BenchRow[]> {
  const base = mkdtempSync(join(process.env.FS_PEERS_DIR ?? tmpdir(), 'savepoint-bench-fs-peers-'));
  try {
    const rows: BenchRow[] = [];
    for (const mode of MODES) rows.push(...(await single(base, mode)));
    rows.push(
      ...(await concurrent(base, 'default', true)),
      ...(await concurrent(base, 'default', false)),
      ...(await concurrent(base, 'journal', true)),
      ...(await concurrent(base, 'journal', false)),
      ...(await concurrent(base, 'direct', false)),
    );
    return rows;
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
