/**
 * SavepointSaver on `savepoint/postgres` vs LangGraph's PostgresSaver, on one real PostgreSQL:
 *
 * - replicas: 8 processes serve 8 threads, each turn of a thread (a two-node graph, 3 puts) on a
 *   random process, several threads at once (fsync on). Turns per second, interleaved rounds:
 *   running replicas (each mode's processes started once, as a service's, a first round left out)
 *   and new processes each round (what their first requests cost); for SavepointSaver also the
 *   store checked against the acknowledged puts: sequences held by two checkpoints, acknowledged
 *   checkpoints missing.
 * - a thread of 10,000 checkpoints (fsync off: reads only): `getTuple` of the newest, and
 *   `list` with a metadata filter and `limit: 10`, medians of repeated calls.
 *
 *   npm run bench -- langgraph-postgres   (running: BENCH_LG_PG_SERVING_ROUNDS=5, BENCH_LG_PG_SERVING_TURNS=20
 *   per thread; new processes: BENCH_LG_PG_ROUNDS=3, BENCH_LG_PG_TURNS=6 per thread, also the running
 *   replicas' first round; BENCH_LG_PG_CHECKPOINTS=10000)
 *
 * Breakdowns on stderr: BENCH_TRACE=1|calls (see langgraph-replica-child.ts; with it, the server's
 * CPU and the connections it accepted per round, `server-cpu <mode> <ms> sessions <n>`), BENCH_CPU_PROF=<dir> (a V8 CPU profile per replica).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type { RunnableConfig } from '@langchain/core/runnables';
import pg from 'pg';
import { SavepointSaver, langGraphProfile } from '../src/entries/langgraph.js';
import { postgresStorage } from '../src/entries/postgres.js';
import { readSnapshot } from '../src/entries/toolkit.js';
import { findPostgresBin, startPostgres } from '../tests/support/postgres-server.js';
import { fmt, median, timeMs, type BenchRow } from './harness.js';

const PROCESSES = 8;
const THREADS = 8;
const ROUNDS = Number(process.env.BENCH_LG_PG_ROUNDS ?? 3);
const TURNS = Number(process.env.BENCH_LG_PG_TURNS ?? 6);
const SERVING_ROUNDS = Number(process.env.BENCH_LG_PG_SERVING_ROUNDS ?? 5);
const SERVING_TURNS = Number(process.env.BENCH_LG_PG_SERVING_TURNS ?? 20);
const CHECKPOINTS = Number(process.env.BENCH_LG_PG_CHECKPOINTS ?? 10_000);
const CHILD = fileURLToPath(new URL('./langgraph-replica-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

type Mode = 'savepoint' | 'langgraph';

interface Child {
  send(line: string): void;
  /** The puts acknowledged since the last call. */
  takePuts(): { thread: string; id: string }[];
  done(turn: number): Promise<void>;
  /** The CPU (ms) the process spent serving turns since it became ready or since the last call, once they are done. */
  cpu(): Promise<number>;
  end(): Promise<void>;
}

function startChild(mode: Mode, url: string, where: string): Promise<Child> {
  // BENCH_CPU_PROF=<dir>: each replica writes a V8 CPU profile there (with BENCH_TRACE, its stderr says when it became ready).
  const profile = process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['BENCH_CPU_PROF']}`] : [];
  const proc = spawn(process.execPath, [...profile, '--import', 'tsx', CHILD, mode, url, where], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map<number, () => void>();
  let puts: { thread: string; id: string }[] = [];
  const cpuAnswers: ((ms: number) => void)[] = [];
  return new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`${mode} replica exited (${code})`)));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      const [word, a, b] = line.split(' ');
      if (word === 'put') puts.push({ thread: a!, id: b! });
      else if (word === 'done') waiting.get(Number(a))?.();
      else if (word === 'cpu') cpuAnswers.shift()?.(Number(a));
      else if (word === 'ready')
        resolve({
          send: (l) => proc.stdin!.write(`${l}\n`),
          takePuts: () => {
            const taken = puts;
            puts = [];
            return taken;
          },
          done: (turn) => new Promise((r) => waiting.set(turn, r)),
          cpu: () =>
            new Promise((r) => {
              cpuAnswers.push(r);
              proc.stdin!.write('cpu\n');
            }),
          end: () => {
            proc.removeAllListeners('exit');
            proc.stdin!.end();
            return new Promise((r) => (proc.exitCode === null ? proc.once('exit', () => r()) : r()));
          },
        });
    });
  });
}

/** utime + stime (+ cutime + cstime: reaped children's) of a process, in clock ticks, from /proc/<pid>/stat. */
function procTicks(pid: string, withChildren: boolean): { ticks: number; ppid: string } {
  // Fields after the command name: state, ppid, …; utime, stime, cutime, cstime are 12–15 (stat(5) fields 14–17).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = (withChildren ? [11, 12, 13, 14] : [11, 12]).reduce((sum, i) => sum + Number(fields[i]), 0);
  return { ticks, ppid: fields[1]! };
}

/**
 * CPU (ms) the server's processes have used so far: the postmaster's own and its reaped
 * children's (backends of connections closed), and each live child's (backends of pools that
 * stay open across rounds), from /proc. Undefined where /proc is missing.
 */
function serverCpuMs(dataDir: string): number | undefined {
  try {
    const pid = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]!.trim();
    let ticks = procTicks(pid, true).ticks;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || entry === pid) continue;
      try {
        const child = procTicks(entry, false);
        if (child.ppid === pid) ticks += child.ticks;
      } catch {
        // The process ended meanwhile: its CPU is in the postmaster's reaped children now.
      }
    }
    return (ticks * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** Connections the server has accepted so far (`pg_stat_database.sessions`, PostgreSQL 14 and later), this one included. */
async function serverSessions(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('select sum(sessions)::text as n from pg_stat_database');
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

function startFleet(mode: Mode, url: string, where: string): Promise<Child[]> {
  return Promise.all(Array.from({ length: PROCESSES }, () => startChild(mode, url, where)));
}

let turnCount = 0;

/** One round: every thread's turns, each on a random replica of the fleet; returns turns per second, the replicas' CPU and what they acknowledged. */
async function replicaRound(children: readonly Child[], tag: string, turns: number) {
  const threads = Array.from({ length: THREADS }, (_, t) => `${tag}-${t}`);
  const wallMs = await timeMs(() =>
    Promise.all(
      threads.map(async (thread) => {
        for (let n = 0; n < turns; n++) {
          const child = children[Math.floor(Math.random() * PROCESSES)]!;
          const t = ++turnCount;
          const done = child.done(t);
          child.send(`${t} ${thread}`);
          await done;
        }
      }),
    ),
  );
  const clientCpuMs = (await Promise.all(children.map((c) => c.cpu()))).reduce((sum, ms) => sum + ms, 0);
  return { perSecond: (THREADS * turns) / (wallMs / 1000), clientCpuMs, threads, puts: children.flatMap((c) => c.takePuts()) };
}

/** Sequences held by two checkpoints, and acknowledged checkpoints not stored, in SavepointSaver's threads. */
async function audit(url: string, table: string, threads: readonly string[], puts: readonly { thread: string; id: string }[]) {
  const storage = postgresStorage({ connectionString: url, table });
  let duplicates = 0;
  let lost = 0;
  try {
    for (const thread of threads) {
      const sequences = new Map<string, number>();
      for await (const entry of storage.list(`langgraph/${thread}/history/`)) {
        const snapshot = await readSnapshot(storage, langGraphProfile, entry.key);
        if (snapshot) sequences.set(snapshot.id, snapshot.sequence);
      }
      duplicates += sequences.size - new Set(sequences.values()).size;
      lost += puts.filter((p) => p.thread === thread && !sequences.has(p.id)).length;
    }
  } finally {
    await storage.close();
  }
  return { duplicates, lost };
}

/** Turns per second and CPU per turn (the replicas' serving turns and the server's) of each mode's rounds, and the audit of SavepointSaver's. */
interface Rounds {
  readonly rates: Record<Mode, number[]>;
  readonly cpuPerTurn: Record<Mode, number[]>;
  duplicates: number;
  lost: number;
}

function newRounds(): Rounds {
  return { rates: { savepoint: [], langgraph: [] }, cpuPerTurn: { savepoint: [], langgraph: [] }, duplicates: 0, lost: 0 };
}

/** Runs one measured round on a fleet and adds it to `into`. */
async function measureRound(into: Rounds, fleet: readonly Child[], mode: Mode, url: string, dataDir: string, tag: string, turns: number) {
  const sessionsBefore = process.env['BENCH_TRACE'] ? await serverSessions(url) : 0;
  const cpuBefore = serverCpuMs(dataDir);
  const result = await replicaRound(fleet, tag, turns);
  const cpuAfter = serverCpuMs(dataDir);
  const serverMs = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : Number.NaN;
  if (process.env['BENCH_TRACE'])
    process.stderr.write(
      `server-cpu ${mode} ${serverMs} client-cpu ${result.clientCpuMs.toFixed(0)} sessions ${(await serverSessions(url)) - sessionsBefore - 1}\n`,
    );
  into.rates[mode].push(result.perSecond);
  into.cpuPerTurn[mode].push((result.clientCpuMs + serverMs) / (THREADS * turns));
  if (mode === 'savepoint') await auditInto(into, url, result);
  process.stderr.write(`  langgraph-postgres replicas ${tag}: ${fmt(result.perSecond)} turns/s\n`);
}

/** Adds the audit of SavepointSaver's store after a round (its threads against the puts acknowledged) to `into`. */
async function auditInto(
  into: Rounds,
  url: string,
  round: { readonly threads: readonly string[]; readonly puts: readonly { thread: string; id: string }[] },
) {
  const found = await audit(url, 'bench_lg_replicas', round.threads, round.puts);
  into.duplicates += found.duplicates;
  into.lost += found.lost;
}

const modesOfRound = (r: number): Mode[] => (r % 2 === 0 ? ['savepoint', 'langgraph'] : ['langgraph', 'savepoint']);

/**
 * Running replicas, as a service's: each mode's processes start once, serve a first round
 * unmeasured (their warm-up), then `SERVING_ROUNDS` rounds of `SERVING_TURNS` turns a thread,
 * the two modes' rounds interleaved.
 */
async function servingRounds(url: string, dataDir: string, into: Rounds): Promise<void> {
  const fleets = {
    savepoint: await startFleet('savepoint', url, 'bench_lg_replicas'),
    langgraph: await startFleet('langgraph', url, 'bench_lg_replicas'),
  };
  try {
    // The first round is left out of the figures, not of the audit.
    for (const mode of modesOfRound(0)) {
      const warm = await replicaRound(fleets[mode], `warm-${mode}`, TURNS);
      if (mode === 'savepoint') await auditInto(into, url, warm);
    }
    for (let r = 0; r < SERVING_ROUNDS; r++)
      for (const mode of modesOfRound(r))
        await measureRound(into, fleets[mode], mode, url, dataDir, `serving-r${r}-${mode}`, SERVING_TURNS);
  } finally {
    await Promise.all([...fleets.savepoint, ...fleets.langgraph].map((c) => c.end()));
  }
}

/** New processes each round, `TURNS` turns a thread: what a process's first requests cost. */
async function freshRounds(url: string, dataDir: string, into: Rounds): Promise<void> {
  for (let r = 0; r < ROUNDS; r++)
    for (const mode of modesOfRound(r)) {
      const fleet = await startFleet(mode, url, 'bench_lg_replicas');
      try {
        await measureRound(into, fleet, mode, url, dataDir, `fresh-r${r}-${mode}`, TURNS);
      } finally {
        await Promise.all(fleet.map((c) => c.end()));
      }
    }
}

function rateRows(rounds: Rounds, which: string, detail: string, target: boolean): BenchRow[] {
  const sp = median(rounds.rates.savepoint);
  const lg = median(rounds.rates.langgraph);
  const spCpu = median(rounds.cpuPerTurn.savepoint);
  const lgCpu = median(rounds.cpuPerTurn.langgraph);
  return [
    {
      area: 'langgraph',
      name: `${PROCESSES} ${which} replica processes (${detail}) serving ${THREADS} threads, each turn on a random one (PostgreSQL, fsync on): turns/s vs PostgresSaver`,
      savepoint: `${fmt(sp)} turns/s`,
      baseline: `${fmt(lg)} turns/s`,
      ratio: `${fmt(sp / lg)}×`,
      target: target ? '≥ 1.0×' : '— (reported)',
      met: !target || sp / lg >= 1,
    },
    {
      area: 'langgraph',
      name: `the same, ${which} processes: CPU per turn: the replicas serving turns and the PostgreSQL server (what bounds turns/s on a loaded machine) vs PostgresSaver`,
      savepoint: `${fmt(spCpu)} ms`,
      baseline: `${fmt(lgCpu)} ms`,
      ratio: `${fmt(spCpu / lgCpu)}×`,
      target: '—',
      met: true,
    },
  ];
}

async function replicaRows(url: string, dataDir: string): Promise<BenchRow[]> {
  const store = postgresStorage({ connectionString: url, table: 'bench_lg_replicas' });
  await store.migrate();
  await store.close();
  const pool = new pg.Pool({ connectionString: url });
  await new PostgresSaver(pool, undefined, { schema: 'bench_lg_replicas' }).setup();
  await pool.end();
  const serving = newRounds();
  await servingRounds(url, dataDir, serving);
  const fresh = newRounds();
  await freshRounds(url, dataDir, fresh);
  const duplicates = serving.duplicates + fresh.duplicates;
  const lost = serving.lost + fresh.lost;
  return [
    ...rateRows(serving, 'running', `${SERVING_ROUNDS} rounds of ${SERVING_TURNS} turns a thread after a first`, true),
    ...rateRows(fresh, 'new', `started each round: their first ${TURNS} turns a thread, ${ROUNDS} rounds`, false),
    {
      area: 'langgraph',
      name: `the same, SavepointSaver's store against its acknowledged puts (every round)`,
      savepoint: `${duplicates} duplicate sequences, ${lost} lost`,
      baseline: '—',
      ratio: '—',
      target: '0 and 0',
      met: duplicates === 0 && lost === 0,
    },
  ];
}

/** Puts `CHECKPOINTS` checkpoints on one thread, one in 100 with `metadata.user = 'ana'`. */
async function fill(saver: BaseCheckpointSaver, thread: string): Promise<void> {
  let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: '' } };
  for (let i = 0; i < CHECKPOINTS; i++) {
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(i), channel_values: { note: `step ${i}` }, channel_versions: { note: i + 1 } };
    config = await saver.put(config, checkpoint, { source: 'loop', step: i, parents: {}, user: i % 100 === 0 ? 'ana' : 'bob' } as never, {
      note: i + 1,
    });
  }
}

async function readRows(url: string): Promise<BenchRow[]> {
  const storage = postgresStorage({ connectionString: url, table: 'bench_lg_reads' });
  const pool = new pg.Pool({ connectionString: url });
  const theirs = new PostgresSaver(pool, undefined, { schema: 'bench_lg_reads' });
  await theirs.setup();
  const ours = new SavepointSaver({ storage, keepLast: false });
  try {
    await fill(ours, 'long');
    await fill(theirs, 'long');
    const config = { configurable: { thread_id: 'long' } };
    const times = {
      getTuple: { savepoint: [] as number[], langgraph: [] as number[] },
      list: { savepoint: [] as number[], langgraph: [] as number[] },
    };
    for (let r = 0; r < 15; r++) {
      // A fresh SavepointSaver each time: a replica that has not met the thread, as after a restart.
      for (const [mode, saver] of [
        ['savepoint', new SavepointSaver({ storage, keepLast: false })],
        ['langgraph', theirs],
      ] as const) {
        times.getTuple[mode].push(await timeMs(() => saver.getTuple(config)));
        times.list[mode].push(
          await timeMs(async () => {
            for await (const _ of saver.list(config, { filter: { user: 'ana' }, limit: 10 }));
          }),
        );
      }
    }
    const row = (what: keyof typeof times, name: string): BenchRow => {
      const sp = median(times[what].savepoint);
      const lg = median(times[what].langgraph);
      return {
        area: 'langgraph',
        name,
        savepoint: `${fmt(sp)} ms`,
        baseline: `${fmt(lg)} ms`,
        ratio: `${fmt(sp / lg)}×`,
        target: '≤ 1.0×',
        met: sp / lg <= 1,
      };
    };
    return [
      row('getTuple', `getTuple of the newest, thread of ${CHECKPOINTS} checkpoints (PostgreSQL) vs PostgresSaver`),
      row('list', `list({ filter: { user }, limit: 10 }), 1 in 100 matching, thread of ${CHECKPOINTS} checkpoints vs PostgresSaver`),
    ];
  } finally {
    await storage.close();
    await pool.end();
  }
}

export async function bench(): Promise<BenchRow[]> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("langgraph-postgres bench: PostgreSQL binaries not found (install Debian's postgresql package)");
  const durable = await startPostgres(bin, { fsync: true });
  let rows: BenchRow[];
  try {
    rows = await replicaRows(durable.url, join(durable.dir, 'data'));
  } finally {
    await durable.destroy();
  }
  const fast = await startPostgres(bin, { fsync: false });
  try {
    return [...rows, ...(await readRows(fast.url))];
  } finally {
    await fast.destroy();
  }
}
