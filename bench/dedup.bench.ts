/**
 * `npm run bench -- dedup`: a long conversation's footprint and speed, savepoint beside
 * LangGraph's own savers, in this process, interleaved turn by turn (ratios of medians).
 *
 * - The conversation: a real `StateGraph` with one node whose `messages` list grows by one
 *   ~2 KB message per turn (three checkpoints a turn: input, loop, the node's), every
 *   checkpoint kept, default options, with a plain reducer and with `DeltaChannel` (default
 *   `snapshotFrequency`). `SavepointSaver(fsStorage({ dir }))` beside `SqliteSaver`
 *   (WAL, `synchronous=FULL`: the durability fsStorage gives), and
 *   `SavepointSaver(postgresStorage(…))` beside `PostgresSaver` on a PostgreSQL server the
 *   bench starts (fsync on). One thread per contender grows to the last turn count; at each
 *   count (50, 100, 200, 400) the rows give bytes (the sum of stored values' sizes, and the size
 *   on disk), time per turn (median over the turns since the previous count), and `getState`
 *   of the oldest and of the newest checkpoint (medians of interleaved reads). Then, per store
 *   and reducer, bytes growth from count to count against n·log n.
 * - The writer: 500 checkpoints of a 200 KB state of which 1 % changes each time, no
 *   retention, `fsStorage` defaults: bytes against SqliteSaver storing the same states, time
 *   against today's writer (the same writer with content addressing off, see `WITHOUT_DEDUP`).
 *
 * - The sweep: the writer's automatic bound (50 snapshots) over 250, 500, 1000 and 1500
 *   checkpoints of that 200 KB state, with the automatic chunk sweep and without, interleaved:
 *   stored bytes at each count, and time per checkpoint (mean and median).
 *
 * Targets (at 200 turns): bytes ≤ 1/50 of the peer's with the plain reducer; time per turn and
 * both reads ≤ 1.0× the peer's; bytes growing no faster than n·log n. Writer: bytes ≤ 1/50 of
 * SqliteSaver's, time ≤ 1.0× today's. Sweep: stored bytes flat (≤ 1.5× from the first count to the
 * last), mean time per checkpoint ≤ 1.1× without the sweep.
 *
 * Knobs: DEDUP_TURNS (default "50,100,200,400"), DEDUP_STORES (default "fs,postgres"),
 * DEDUP_READS (default 61: reads of each checkpoint per count, interleaved; the median of 15 PostgreSQL reads of ~2 ms swung 0.4–1.7× the peer's from one
 * round to the next in one process), DEDUP_WRITER_COUNT (default 500), DEDUP_PARTS (default
 * "conversation,writer,sweep"), DEDUP_SWEEP_COUNTS (default "250,500,1000,1500"), DEDUP_REDUCERS (default "plain,delta"), DEDUP_DIR (default the OS's
 * temporary directory), DEDUP_MESSAGE_BYTES (default 2048: each turn's message), DEDUP_BREAKDOWN (set: after each conversation, savepoint's stored bytes by
 * kind on stderr, see stored-breakdown.ts), DEDUP_FS_LAYOUT (default "default": the fs conversation's
 * SavepointSaver, and the writer and sweep rows' writers, on `fsStorage({ dir })` as a user makes it — a new directory, so the
 * packed layout; "files": on `layout: 'files'` (the journal); "packed": on `layout: 'packed'`; "packed-vs-files": the
 * packed layout beside SavepointSaver on the file layout instead of SqliteSaver, the ratios packed / journal).
 * SqliteSaver (native better-sqlite3) is a bench-only install: `npm run bench:setup`.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, DeltaChannel, END, START, StateGraph } from '@langchain/langgraph';
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import {
  createWriter,
  defaultProfile,
  type CheckpointWriter,
  type DefaultTrigger,
  type JsonValue,
  type LifecycleStatus,
  type StorageAdapter,
} from 'savepoint';
import { fsStorage, type FsStorageOptions } from 'savepoint/fs';
import { manualClock } from 'savepoint/testing';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';
import { findPostgresBin, startPostgres, type PostgresServer } from '../tests/support/postgres-server.js';
import { letters } from '../tests/support/letters.js';
import { fmt, median, timeMs, type BenchRow } from './harness.js';
import { breakdownLines, storedBreakdown } from './stored-breakdown.js';

const AREA = 'dedup';
const TURNS = (process.env.DEDUP_TURNS ?? '50,100,200,400')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const STORES = (process.env.DEDUP_STORES ?? 'fs,postgres').split(',');
const READS = Number(process.env.DEDUP_READS ?? 61);
const WRITER_COUNT = Number(process.env.DEDUP_WRITER_COUNT ?? 500);
const PARTS = (process.env.DEDUP_PARTS ?? 'conversation,writer,sweep').split(',');
const SWEEP_COUNTS = (process.env.DEDUP_SWEEP_COUNTS ?? '250,500,1000,1500')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const REDUCERS = (process.env.DEDUP_REDUCERS ?? 'plain,delta').split(',');
const FS_LAYOUT = process.env.DEDUP_FS_LAYOUT ?? 'default';
if (!['default', 'files', 'packed', 'packed-vs-files'].includes(FS_LAYOUT))
  throw new Error(`dedup bench: DEDUP_FS_LAYOUT must be default, files, packed or packed-vs-files, not ${FS_LAYOUT}`);
/** The options of the fs stores savepoint's side writes to (DEDUP_FS_LAYOUT). */
const fsOptions = (dir: string): FsStorageOptions =>
  FS_LAYOUT === 'default' ? { dir } : { dir, layout: FS_LAYOUT === 'files' ? 'files' : 'packed' };
const MESSAGE_BYTES = Number(process.env.DEDUP_MESSAGE_BYTES ?? 2048);
/** The turn count the issue's targets are stated at. */
const TARGET_TURNS = 200;
/** The writer's options that turn content addressing off: the writer as it stored every checkpoint whole. */
const WITHOUT_DEDUP: Record<string, unknown> = { dedup: false };

type Reducer = 'plain' | 'delta';

/** A ~2 KB message, different every turn (pseudo-random letters: no store may compress it away). */
const message = (turn: number): string => letters(turn, MESSAGE_BYTES, `turn ${turn}: `);

/** What the bench uses of a compiled graph. */
interface Conversation {
  invoke(input: { turn: number }, config: RunnableConfig): Promise<unknown>;
  getState(config: RunnableConfig): Promise<{ values: { messages?: unknown[] } }>;
}

/** The one-node conversation: each turn the node appends one ~2 KB message. */
function conversation(reducer: Reducer, checkpointer: BaseCheckpointSaver): Conversation {
  const reply = (s: { turn: number }) => ({ messages: [message(s.turn)] });
  if (reducer === 'plain') {
    const State = Annotation.Root({
      turn: Annotation<number>(),
      messages: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    return new StateGraph(State).addNode('reply', reply).addEdge(START, 'reply').addEdge('reply', END).compile({ checkpointer });
  }
  const State = Annotation.Root({
    turn: Annotation<number>(),
    messages: new DeltaChannel<string[], string | string[]>((state, writes) => state.concat(...writes), { initialValueFactory: () => [] }),
  });
  return new StateGraph(State).addNode('reply', reply).addEdge(START, 'reply').addEdge('reply', END).compile({ checkpointer });
}

/** Bytes a contender holds: the sum of its stored values' sizes, and what its files or tables take on disk. */
interface Footprint {
  readonly stored: number;
  readonly disk: number;
}

/** One saver of a comparison, with how to measure what it stores. */
interface Contender {
  readonly label: string;
  readonly saver: BaseCheckpointSaver;
  footprint(): Promise<Footprint>;
  close(): Promise<void>;
  /** savepoint's store, for DEDUP_BREAKDOWN. */
  readonly storage?: StorageAdapter;
}

/** SqliteSaver as the bench uses it (typed here: the package is a bench-only install, imported when present). */
interface SqliteSaverLike extends BaseCheckpointSaver {
  readonly db: { pragma(sql: string): unknown; prepare(sql: string): { get(): unknown }; close(): void };
}

async function loadSqliteSaver(): Promise<{ fromConnString(path: string): SqliteSaverLike }> {
  const name = '@langchain/langgraph-checkpoint-sqlite';
  try {
    return ((await import(name)) as { SqliteSaver: { fromConnString(path: string): SqliteSaverLike } }).SqliteSaver;
  } catch (err) {
    throw new Error(`dedup bench: ${name} (SqliteSaver, native better-sqlite3) is not installed: run npm run bench:setup`, { cause: err });
  }
}

function diskBytes(dir: string, matching: (name: string) => boolean = () => true): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && matching(e.name)) total += statSync(join(e.parentPath, e.name)).blocks * 512;
  }
  return total;
}

async function storedBytes(storage: StorageAdapter): Promise<number> {
  let total = 0;
  for await (const entry of storage.list('')) total += entry.size;
  return total;
}

async function sqliteContender(dir: string, name: string): Promise<Contender> {
  const SqliteSaver = await loadSqliteSaver();
  const file = join(dir, `${name}.sqlite`);
  const saver = SqliteSaver.fromConnString(file);
  saver.db.pragma('journal_mode = WAL');
  saver.db.pragma('synchronous = FULL');
  const sum = (sql: string): number => Number((saver.db.prepare(sql).get() as { n: number | null }).n ?? 0);
  return {
    label: 'SqliteSaver (synchronous=FULL)',
    saver,
    async footprint() {
      // SqliteSaver makes its tables at its first call: there are none before.
      const stored =
        sum('SELECT SUM(LENGTH(checkpoint) + LENGTH(metadata)) AS n FROM checkpoints') + sum('SELECT SUM(LENGTH(value)) AS n FROM writes');
      return { stored, disk: diskBytes(dir, (f) => f.startsWith(`${name}.sqlite`)) };
    },
    async close() {
      saver.db.close();
    },
  };
}

function savepointContender(storage: StorageAdapter, disk: () => Promise<number>, where: string): Contender {
  return {
    label: `SavepointSaver (${where})`,
    saver: new SavepointSaver({ storage }),
    footprint: async () => ({ stored: await storedBytes(storage), disk: await disk() }),
    close: () => storage.close(),
    storage,
  };
}

/**
 * The fs pair: SavepointSaver on `fsStorage({ dir })` (defaults; with DEDUP_FS_LAYOUT=packed, the
 * packed layout) and SqliteSaver, each in its own directory. DEDUP_FS_LAYOUT=packed-vs-files pairs
 * the packed layout with the file layout (the journal) instead: the ratios are packed / journal,
 * measured turn by turn in one process.
 */
async function fsPair(base: string, tag: string): Promise<[Contender, Contender]> {
  const spDir = mkdtempSync(join(base, `sp-${tag}-`));
  const sqDir = mkdtempSync(join(base, `sq-${tag}-`));
  const label = FS_LAYOUT === 'default' ? 'fsStorage' : FS_LAYOUT === 'files' ? 'fsStorage, file layout' : 'fsStorage, packed layout';
  const ours = savepointContender(fsStorage(fsOptions(spDir)), async () => diskBytes(spDir), label);
  if (FS_LAYOUT !== 'packed-vs-files') return [ours, await sqliteContender(sqDir, tag)];
  return [ours, savepointContender(fsStorage({ dir: sqDir, layout: 'files' }), async () => diskBytes(sqDir), 'fsStorage, file layout')];
}

const PEER_TABLES = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes'];

/** The PostgreSQL pair: SavepointSaver on `postgresStorage` (its own table) and PostgresSaver (its own schema), one pool each. */
async function postgresPair(url: string, tag: string): Promise<[Contender, Contender]> {
  const table = `dedup_${tag}`;
  const schema = `lg_${tag}`;
  const spPool = new pg.Pool({ connectionString: url, max: 4 });
  const storage = postgresStorage({ pool: spPool, table });
  const relationSize = async (pool: pg.Pool, names: string[]): Promise<number> => {
    const r = await pool.query<{ n: string | null }>(
      'SELECT SUM(pg_total_relation_size(to_regclass(t))) AS n FROM unnest($1::text[]) AS t',
      [names],
    );
    return Number(r.rows[0]?.n ?? 0);
  };
  const ours: Contender = {
    ...savepointContender(storage, () => relationSize(spPool, [`public.${table}`]), 'postgresStorage'),
    close: async () => {
      await storage.close();
      await spPool.end();
    },
  };
  const lgPool = new pg.Pool({ connectionString: url, max: 4 });
  const saver = new PostgresSaver(lgPool, undefined, { schema });
  await saver.setup();
  const peer: Contender = {
    label: 'PostgresSaver',
    saver,
    async footprint() {
      const q = (sql: string) => lgPool.query<{ n: string | null }>(sql).then((r) => Number(r.rows[0]?.n ?? 0));
      const stored =
        (await q(`SELECT SUM(pg_column_size(checkpoint) + pg_column_size(metadata)) AS n FROM ${schema}.checkpoints`)) +
        (await q(`SELECT SUM(octet_length(blob)) AS n FROM ${schema}.checkpoint_blobs`)) +
        (await q(`SELECT SUM(octet_length(blob)) AS n FROM ${schema}.checkpoint_writes`));
      return {
        stored,
        disk: await relationSize(
          lgPool,
          PEER_TABLES.map((t) => `${schema}.${t}`),
        ),
      };
    },
    close: () => lgPool.end(),
  };
  return [ours, peer];
}

/** What one contender's thread measured at one turn count. */
interface Milestone {
  readonly turns: number;
  readonly footprint: Footprint;
  /** Median time of the turns since the previous count, ms. */
  readonly perTurn: number;
  readonly oldest: number;
  readonly newest: number;
}

/** One contender's thread: its graph, config, the oldest checkpoint's config once known, and its turn times. */
interface Thread {
  readonly contender: Contender;
  readonly app: Conversation;
  readonly config: RunnableConfig;
  oldest: RunnableConfig | undefined;
  times: number[];
}

async function oldestOf(saver: BaseCheckpointSaver, config: RunnableConfig): Promise<RunnableConfig> {
  let last: RunnableConfig | undefined;
  for await (const tuple of saver.list(config)) last = tuple.config;
  if (!last) throw new Error('dedup bench: the thread has no checkpoint');
  return last;
}

/** Times `getState` of the oldest and of the newest checkpoint of each thread, interleaved. */
async function reads(threads: readonly Thread[]): Promise<{ oldest: number; newest: number }[]> {
  const out = threads.map(() => ({ oldest: [] as number[], newest: [] as number[] }));
  for (let r = 0; r < READS; r++) {
    for (let k = 0; k < threads.length; k++) {
      const i = (r + k) % threads.length;
      const t = threads[i]!;
      out[i]!.oldest.push(await timeMs(() => t.app.getState(t.oldest!)));
      out[i]!.newest.push(await timeMs(() => t.app.getState(t.config)));
    }
  }
  return out.map((o) => ({ oldest: median(o.oldest), newest: median(o.newest) }));
}

/** Plays the conversation on both contenders, turn by turn (alternating which goes first), measuring at each count of `TURNS`. */
async function playPair(pair: readonly [Contender, Contender], reducer: Reducer, thread: string): Promise<Milestone[][]> {
  const threads: Thread[] = pair.map((contender) => ({
    contender,
    app: conversation(reducer, contender.saver),
    config: { configurable: { thread_id: thread } },
    oldest: undefined,
    times: [],
  }));
  const milestones: Milestone[][] = [[], []];
  for (let turn = 1; turn <= TURNS.at(-1)!; turn++) {
    for (let k = 0; k < 2; k++) {
      const t = threads[(turn + k) % 2]!;
      t.times.push(await timeMs(() => t.app.invoke({ turn }, t.config)));
    }
    if (turn === 1) for (const t of threads) t.oldest = await oldestOf(t.contender.saver, t.config);
    if (!TURNS.includes(turn)) continue;
    const read = await reads(threads);
    for (const [i, t] of threads.entries()) {
      const footprint = await t.contender.footprint();
      milestones[i]!.push({ turns: turn, footprint, perTurn: median(t.times), ...read[i]! });
      t.times = [];
    }
  }
  return milestones;
}

const mb = (bytes: number): string => `${fmt(bytes / 1e6)} MB`;

function milestoneRows(store: string, reducer: Reducer, labels: readonly [string, string], ours: Milestone, theirs: Milestone): BenchRow[] {
  const at = `${store}, ${reducer === 'plain' ? 'plain reducer' : 'DeltaChannel'}, ${ours.turns} turns`;
  const targeted = ours.turns === TARGET_TURNS;
  const bytesRatio = ours.footprint.stored / theirs.footprint.stored;
  const bytesTarget = targeted && reducer === 'plain' ? 1 / 50 : undefined;
  const timeRatio = ours.perTurn / theirs.perTurn;
  const readRatios = [ours.oldest / theirs.oldest, ours.newest / theirs.newest] as const;
  return [
    {
      area: AREA,
      name: `${at}: bytes (sum of stored values; on disk) vs ${labels[1]}`,
      savepoint: `${mb(ours.footprint.stored)}; ${mb(ours.footprint.disk)} on disk`,
      baseline: `${mb(theirs.footprint.stored)}; ${mb(theirs.footprint.disk)} on disk`,
      ratio: `${fmt(bytesRatio)}× stored, ${fmt(ours.footprint.disk / theirs.footprint.disk)}× on disk`,
      target: bytesTarget === undefined ? '— (reported)' : '≤ 0.02× (1/50)',
      met: bytesTarget === undefined || bytesRatio <= bytesTarget,
    },
    {
      area: AREA,
      name: `${at}: time per turn (median of the turns since the previous count) vs ${labels[1]}`,
      savepoint: `${fmt(ours.perTurn)} ms/turn`,
      baseline: `${fmt(theirs.perTurn)} ms/turn`,
      ratio: `${fmt(timeRatio)}×`,
      target: targeted ? '≤ 1.0×' : '— (reported)',
      met: !targeted || timeRatio <= 1.0,
    },
    {
      area: AREA,
      name: `${at}: getState of the oldest / the newest checkpoint vs ${labels[1]}`,
      savepoint: `${fmt(ours.oldest)} / ${fmt(ours.newest)} ms`,
      baseline: `${fmt(theirs.oldest)} / ${fmt(theirs.newest)} ms`,
      ratio: `${fmt(readRatios[0])}× / ${fmt(readRatios[1])}×`,
      target: targeted ? '≤ 1.0× each' : '— (reported)',
      met: !targeted || (readRatios[0] <= 1.0 && readRatios[1] <= 1.0),
    },
  ];
}

/** Bytes growth from the first count to the last, against n·log n's over the same counts. */
function growthRow(store: string, reducer: Reducer, ours: readonly Milestone[]): BenchRow[] {
  if (ours.length < 2) return [];
  const first = ours[0]!;
  const last = ours.at(-1)!;
  const nlogn = (n: number): number => n * Math.log2(n);
  const grew = last.footprint.stored / first.footprint.stored;
  const bound = nlogn(last.turns) / nlogn(first.turns);
  const steps = ours.map((m) => `${m.turns}: ${mb(m.footprint.stored)}`).join(', ');
  return [
    {
      area: AREA,
      name: `${store}, ${reducer === 'plain' ? 'plain reducer' : 'DeltaChannel'}: bytes growth ${first.turns} → ${last.turns} turns vs n·log n (${steps})`,
      savepoint: `×${fmt(grew)}`,
      baseline: `×${fmt(bound)} (n·log n)`,
      ratio: `${fmt(grew / bound)}× of n·log n's growth`,
      target: '≤ 1.0×',
      met: grew <= bound,
    },
  ];
}

async function conversationRows(store: string, makePair: (tag: string) => Promise<[Contender, Contender]>): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const reducer of ['plain', 'delta'] as const) {
    if (!REDUCERS.includes(reducer)) continue;
    const pair = await makePair(`${reducer}_${Date.now().toString(36)}`);
    try {
      process.stderr.write(`  dedup: ${store}, ${reducer}, ${TURNS.at(-1)} turns…\n`);
      const [ours, theirs] = await playPair(pair, reducer, `conversation-${reducer}`);
      for (const [i, m] of ours!.entries()) rows.push(...milestoneRows(store, reducer, [pair[0].label, pair[1].label], m, theirs![i]!));
      rows.push(...growthRow(store, reducer, ours!));
      const storage = pair[0].storage;
      if (process.env.DEDUP_BREAKDOWN && storage) {
        process.stderr.write(
          `${[`  dedup: ${store}, ${reducer}, ${TURNS.at(-1)} turns,`, ...breakdownLines(await storedBreakdown(storage))].join('\n')}\n`,
        );
      }
    } finally {
      await Promise.all(pair.map((c) => c.close()));
    }
  }
  return rows;
}

/** A 200 KB state of 200 items of ~1 KB: at step `i`, items `2i` and `2i + 1` (mod 200) change (1 %). */
function slowState(step: number, items: string[]): JsonValue {
  for (const k of [(2 * step) % items.length, (2 * step + 1) % items.length]) items[k] = `${message(step * 1000 + k).slice(0, 1000)}`;
  return { step, items: [...items] };
}

async function writerRows(base: string): Promise<BenchRow[]> {
  const dirs = ['sp', 'today', 'sq'].map((d) => mkdtempSync(join(base, `writer-${d}-`))) as [string, string, string];
  const stores = [fsStorage(fsOptions(dirs[0])), fsStorage(fsOptions(dirs[1]))] as const;
  const common = { profile: defaultProfile, runId: 'writer', autoRetention: false, heartbeatIntervalMs: false } as const;
  const ours = createWriter({ ...common, storage: stores[0] });
  const today = createWriter({ ...common, ...WITHOUT_DEDUP, storage: stores[1] });
  const sqlite = await sqliteContender(dirs[2], 'writer');
  const items = Array.from({ length: 200 }, (_, k) => message(k).slice(0, 1000));
  const times = { ours: [] as number[], today: [] as number[] };
  try {
    for (let i = 0; i < WRITER_COUNT; i++) {
      const state = slowState(i, items);
      const write = async (w: typeof ours, into: number[]) => {
        into.push(
          await timeMs(async () => {
            const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state });
            if (!r.ok) throw r.error;
          }),
        );
      };
      if (i % 2 === 0) await write(ours, times.ours).then(() => write(today, times.today));
      else await write(today, times.today).then(() => write(ours, times.ours));
      const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: uuid6(i), channel_values: { state }, channel_versions: { state: i + 1 } };
      await sqlite.saver.put(
        { configurable: { thread_id: 'writer', checkpoint_ns: '' } },
        checkpoint,
        { source: 'loop', step: i, parents: {} },
        {
          state: i + 1,
        },
      );
    }
    await Promise.all([ours.close(), today.close()]);
    const spStored = await storedBytes(stores[0]);
    const spDisk = diskBytes(dirs[0]);
    const peer = await sqlite.footprint();
    const ratio = spStored / peer.stored;
    const timeRatio = median(times.ours) / median(times.today);
    return [
      {
        area: AREA,
        name: `writer: ${WRITER_COUNT} checkpoints of a 200 KB state, 1 % changing, no retention (fs): bytes (stored; on disk) vs SqliteSaver`,
        savepoint: `${mb(spStored)}; ${mb(spDisk)} on disk`,
        baseline: `${mb(peer.stored)}; ${mb(peer.disk)} on disk (SqliteSaver)`,
        ratio: `${fmt(ratio)}× stored, ${fmt(spDisk / peer.disk)}× on disk`,
        target: '≤ 0.02× (1/50)',
        met: ratio <= 1 / 50,
      },
      {
        area: AREA,
        name: `writer: the same checkpoints, time vs today's writer (${Object.keys(WITHOUT_DEDUP).length === 0 ? 'no off switch yet: the same writer' : 'content addressing off'})`,
        savepoint: `${fmt(median(times.ours))} ms`,
        baseline: `${fmt(median(times.today))} ms (today's writer)`,
        ratio: `${fmt(timeRatio)}×`,
        target: '≤ 1.0×',
        met: timeRatio <= 1.0,
      },
    ];
  } finally {
    await Promise.all([...stores.map((s) => s.close()), sqlite.close()]);
  }
}

/** One writer of the sweep rows: its store, the time each checkpoint took, and the store's bytes at each count. */
interface SweepSide {
  readonly storage: StorageAdapter;
  readonly writer: Pick<CheckpointWriter<JsonValue, DefaultTrigger, LifecycleStatus>, 'checkpoint' | 'close'>;
  readonly items: string[];
  readonly times: number[];
  readonly bytes: number[];
}

/**
 * The writer's automatic bound (the default profile's 50 snapshots) over a long run of the 200 KB
 * state, 1 % changing, on fs, with the automatic chunk sweep (default options) and without it
 * (`sweepChunks: false`), interleaved checkpoint by checkpoint. A manual clock moves 30 s per
 * checkpoint, so the sweep's grace period (1 hour) passes every 120 checkpoints as in a real run.
 */
async function sweepRows(base: string): Promise<BenchRow[]> {
  const clock = manualClock(0);
  const common = { profile: defaultProfile, runId: 'bounded', heartbeatIntervalMs: false, lock: false, clock } as const;
  const side = (sweepChunks: boolean): SweepSide => {
    const dir = mkdtempSync(join(base, `sweep-${sweepChunks}-`));
    const storage = fsStorage(fsOptions(dir));
    const writer = createWriter({ ...common, storage, sweepChunks });
    const items = Array.from({ length: 200 }, (_, k) => message(k).slice(0, 1000));
    return { storage, writer, items, times: [], bytes: [] };
  };
  const sides = [side(true), side(false)] as const;
  const last = SWEEP_COUNTS.at(-1)!;
  try {
    for (let i = 0; i < last; i++) {
      for (const s of i % 2 === 0 ? sides : [...sides].reverse()) {
        const state = slowState(i, s.items);
        s.times.push(
          await timeMs(async () => {
            const r = await s.writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state });
            if (!r.ok) throw r.error;
          }),
        );
      }
      await clock.advance(30_000);
      if (SWEEP_COUNTS.includes(i + 1)) for (const s of sides) s.bytes.push(await storedBytes(s.storage));
    }
    await Promise.all(sides.map((s) => s.writer.close()));
  } finally {
    await Promise.all(sides.map((s) => s.storage.close()));
  }
  const [swept, unswept] = sides;
  // From the second count: by the first, the grace period (120 checkpoints here) has barely passed once.
  const from = Math.min(1, SWEEP_COUNTS.length - 1);
  const growth = swept.bytes.at(-1)! / swept.bytes[from]!;
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const meanRatio = mean(swept.times) / mean(unswept.times);
  const medianRatio = median(swept.times) / median(unswept.times);
  return [
    {
      area: AREA,
      name: `sweep: the writer's automatic bound over ${SWEEP_COUNTS.join(' / ')} checkpoints of a 200 KB state, 1 % changing (fs): stored bytes with the automatic sweep vs without`,
      savepoint: swept.bytes.map(mb).join(' / '),
      baseline: `${unswept.bytes.map(mb).join(' / ')} (sweepChunks: false)`,
      ratio: `${fmt(growth)}× growth ${SWEEP_COUNTS[from]} → ${last}; ${fmt(swept.bytes.at(-1)! / unswept.bytes.at(-1)!)}× of without at ${last}`,
      target: 'flat: ≤ 1.5× growth from the second count',
      met: growth <= 1.5,
    },
    {
      area: AREA,
      name: `sweep: the same checkpoints, time per checkpoint (mean, which carries the sweeps' share; median) with the automatic sweep vs without`,
      savepoint: `${fmt(mean(swept.times))} ms; ${fmt(median(swept.times))} ms`,
      baseline: `${fmt(mean(unswept.times))} ms; ${fmt(median(unswept.times))} ms (sweepChunks: false)`,
      ratio: `${fmt(meanRatio)}× mean, ${fmt(medianRatio)}× median`,
      target: '≤ 1.1× mean',
      met: meanRatio <= 1.1,
    },
  ];
}

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const base = mkdtempSync(join(process.env.DEDUP_DIR ?? tmpdir(), 'savepoint-bench-dedup-'));
  let server: PostgresServer | undefined;
  try {
    if (PARTS.includes('conversation')) {
      if (STORES.includes('fs')) rows.push(...(await conversationRows('fs', (tag) => fsPair(base, tag))));
      if (STORES.includes('postgres')) {
        const bin = findPostgresBin();
        if (!bin) throw new Error("dedup bench: PostgreSQL binaries not found (install Debian's postgresql package), or DEDUP_STORES=fs");
        server = await startPostgres(bin, { fsync: true });
        const url = server.url;
        rows.push(...(await conversationRows('postgres', (tag) => postgresPair(url, tag))));
      }
    }
    if (PARTS.includes('writer')) rows.push(...(await writerRows(base)));
    if (PARTS.includes('sweep')) rows.push(...(await sweepRows(base)));
  } finally {
    await server?.destroy();
    rmSync(base, { recursive: true, force: true });
  }
  return rows;
}
