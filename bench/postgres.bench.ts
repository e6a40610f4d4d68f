/**
 * savepoint's writer on `savepoint/postgres` vs LangGraph's `PostgresSaver` (its own API:
 * `setup()`, then `putWrites` + `put` per step), on one real PostgreSQL server with fsync on:
 * 8 processes, each writing one run/thread of ~1 KB states step after step, all at once.
 * Rounds alternate between the two (interleaved, so machine load hits both alike); the figures
 * are medians of the rounds: checkpoints per second across the 8 processes, and statements
 * (round trips) the driver sent per checkpoint. Targets: ≥ 1.0× PostgresSaver's
 * throughput, one round trip per checkpoint.
 *
 *   npm run bench -- postgres        (BENCH_PG_ROUNDS=3, BENCH_PG_COUNT=50 per process)
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { postgresStorage } from 'savepoint/postgres';
import { findPostgresBin, startPostgres } from '../tests/support/postgres-server.js';
import { fmt, median, type BenchRow } from './harness.js';

const PROCESSES = 8;
const ROUNDS = Number(process.env.BENCH_PG_ROUNDS ?? 3);
const COUNT = Number(process.env.BENCH_PG_COUNT ?? 50);
const CHILD = fileURLToPath(new URL('./postgres-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

type Mode = 'savepoint' | 'langgraph';

/** One round: 8 children ready, then all told to go at once; wall time until the last is done. */
async function round(mode: Mode, url: string, where: string, tag: string): Promise<{ perSecond: number; statementsPerCheckpoint: number }> {
  const children = Array.from({ length: PROCESSES }, (_, i) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, mode, url, where, `${tag}-${i}`, String(COUNT)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines: string[] = [];
    const next = (prefix: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const seen = lines.find((l) => l.startsWith(prefix));
        if (seen) return resolve(seen);
        const rl = createInterface({ input: proc.stdout! });
        rl.on('line', (l) => {
          lines.push(l);
          if (l.startsWith(prefix)) {
            rl.close();
            resolve(l);
          }
        });
        proc.once('exit', (code) => reject(new Error(`${mode} bench child exited (${code}) before "${prefix}"`)));
      });
    return { proc, next };
  });
  await Promise.all(children.map((c) => c.next('ready')));
  const start = performance.now();
  const done = children.map((c) => c.next('done'));
  for (const c of children) c.proc.stdin!.write('go\n');
  const lines = await Promise.all(done);
  const wallMs = performance.now() - start;
  await Promise.all(children.map((c) => new Promise((r) => (c.proc.exitCode === null ? c.proc.once('exit', r) : r(undefined)))));
  const statements = lines.reduce((sum, l) => sum + Number(l.split(' ')[2]), 0);
  return { perSecond: (PROCESSES * COUNT) / (wallMs / 1000), statementsPerCheckpoint: statements / (PROCESSES * COUNT) };
}

export async function bench(): Promise<BenchRow[]> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("postgres bench: PostgreSQL binaries not found (install Debian's postgresql package)");
  const server = await startPostgres(bin, { fsync: true });
  try {
    // Tables made once, before any round, by each side's own setup.
    const store = postgresStorage({ connectionString: server.url, table: 'bench_savepoint' });
    await store.migrate();
    await store.close();
    const pool = new pg.Pool({ connectionString: server.url });
    await new PostgresSaver(pool, undefined, { schema: 'bench_langgraph' }).setup();
    await pool.end();

    const results: Record<Mode, { perSecond: number; statementsPerCheckpoint: number }[]> = { savepoint: [], langgraph: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const order: Mode[] = r % 2 === 0 ? ['savepoint', 'langgraph'] : ['langgraph', 'savepoint'];
      for (const mode of order) {
        results[mode].push(await round(mode, server.url, mode === 'savepoint' ? 'bench_savepoint' : 'bench_langgraph', `r${r}`));
        process.stderr.write(`  postgres round ${r + 1}/${ROUNDS} ${mode}: ${fmt(results[mode].at(-1)!.perSecond)} checkpoints/s\n`);
      }
    }
    const sp = median(results.savepoint.map((x) => x.perSecond));
    const lg = median(results.langgraph.map((x) => x.perSecond));
    const spTrips = median(results.savepoint.map((x) => x.statementsPerCheckpoint));
    const lgTrips = median(results.langgraph.map((x) => x.statementsPerCheckpoint));
    return [
      {
        area: 'postgres',
        name: `writer vs PostgresSaver, ${PROCESSES} processes × ${COUNT} checkpoints (1 KB), fsync on`,
        savepoint: `${fmt(sp)} checkpoints/s`,
        baseline: `${fmt(lg)} checkpoints/s`,
        ratio: `${fmt(sp / lg)}×`,
        target: '≥ 1.0×',
        met: sp / lg >= 1,
      },
      {
        area: 'postgres',
        name: 'round trips (driver statements) per checkpoint',
        savepoint: fmt(spTrips),
        baseline: fmt(lgTrips),
        ratio: `${fmt(spTrips / lgTrips)}×`,
        target: '1',
        met: spTrips <= 1.0001,
      },
    ];
  } finally {
    await server.destroy();
  }
}
