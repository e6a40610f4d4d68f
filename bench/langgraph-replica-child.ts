/**
 * One replica process of the LangGraph PostgreSQL bench: a graph compiled with SavepointSaver
 * (on `savepoint/postgres`) or LangGraph's PostgresSaver, serving the turns the parent sends on
 * stdin (`<turn> <thread>` lines), several at once. Prints `ready`, then `put <thread> <id>`
 * for each acknowledged put and `done <turn>` when a turn's invoke returned. A `cpu` line asks,
 * once every turn sent before it is done, for `cpu <ms>`: the CPU the process spent since `ready`
 * or since the last such answer (the parent's rounds). stdin's end ends the process the same way.
 *
 * With BENCH_TRACE set, each turn's time goes to stderr (`trace <mode> <pid> <turn> <ms>`): how a
 * process's first turns compare with its later ones; at the end, the CPU the process spent
 * before `ready` and serving turns (`cpu <mode> <pid> <turns> <start-up ms> <serving ms>`), and
 * when it became ready on the monotonic clock CPU profiles use (`ready <mode> <pid> <µs>`), and for
 * SavepointSaver the statements its store sent (`trips savepoint <pid> <turns> <statements>`). With
 * BENCH_TRACE=calls, each checkpointer call's time too (`call <mode> <pid> <method> <ms> <turns
 * done before>`): which call a first turn spends its time in.
 *
 * argv: savepoint|langgraph <url> <table or schema>
 */
import { createInterface } from 'node:readline';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { SavepointSaver } from '../src/entries/langgraph.js';
import { postgresStorage } from '../src/entries/postgres.js';

const [mode, url, where] = process.argv.slice(2) as [string, string, string];

/** SavepointSaver, reporting each acknowledged put. */
class ReportingSaver extends SavepointSaver {
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, versions: ChannelVersions) {
    const saved = await super.put(config, checkpoint, metadata, versions);
    process.stdout.write(`put ${String(config.configurable?.['thread_id'])} ${checkpoint.id}\n`);
    return saved;
  }
}

const pool = mode === 'langgraph' ? new pg.Pool({ connectionString: url, max: 4 }) : undefined;
const storage = mode === 'savepoint' ? postgresStorage({ connectionString: url, table: where, poolSize: 4 }) : undefined;
const checkpointer: BaseCheckpointSaver = storage
  ? new ReportingSaver({ storage, keepLast: false })
  : new PostgresSaver(pool!, undefined, { schema: where });

/** With BENCH_TRACE=calls: the saver's reads and writes, each timed to stderr. */
function traceCalls(saver: BaseCheckpointSaver): void {
  if (process.env['BENCH_TRACE'] !== 'calls') return;
  const target = saver as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const method of ['getTuple', 'put', 'putWrites']) {
    const call = target[method]!.bind(saver);
    target[method] = async (...args) => {
      const t0 = performance.now();
      const result = await call(...args);
      process.stderr.write(`call ${mode} ${process.pid} ${method} ${(performance.now() - t0).toFixed(1)} ${turnsDone}\n`);
      return result;
    };
  }
}
traceCalls(checkpointer);

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  note: Annotation<string>({ reducer: (_, n) => n, default: () => '' }),
});
const graph = new StateGraph(State)
  .addNode('plan', (s: typeof State.State) => ({ count: 1, note: `plan ${s.count} `.repeat(40) }))
  .addNode('act', (s: typeof State.State) => ({ count: 1, note: `act ${s.count} `.repeat(40) }))
  .addEdge(START, 'plan')
  .addEdge('plan', 'act')
  .addEdge('act', END)
  .compile({ checkpointer });

const cpuAtReady = process.cpuUsage();
let cpuAtRound = cpuAtReady;
// The monotonic clock a CPU profile's timestamps use: samples after this are serving turns.
if (process.env['BENCH_TRACE']) process.stderr.write(`ready ${mode} ${process.pid} ${process.hrtime.bigint() / 1000n}\n`);
process.stdout.write('ready\n');
let turns: Promise<void>[] = [];
let turnsServed = 0;
let turnsDone = 0;
const ms = (usage: NodeJS.CpuUsage): string => ((usage.user + usage.system) / 1000).toFixed(1);
/** Answers `cpu <ms>` once the turns sent so far are done: the CPU since the last answer. */
async function reportCpu(): Promise<void> {
  await Promise.all(turns);
  turnsServed += turns.length;
  turns = [];
  const now = process.cpuUsage();
  process.stdout.write(`cpu ${ms({ user: now.user - cpuAtRound.user, system: now.system - cpuAtRound.system })}\n`);
  cpuAtRound = now;
}
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'cpu') {
    await reportCpu();
    continue;
  }
  const [turn, thread] = line.split(' ') as [string, string];
  const t0 = performance.now();
  turns.push(
    graph.invoke({ count: 1 }, { configurable: { thread_id: thread } }).then(() => {
      if (process.env['BENCH_TRACE']) process.stderr.write(`trace ${mode} ${process.pid} ${turn} ${(performance.now() - t0).toFixed(1)}\n`);
      turnsDone++;
      process.stdout.write(`done ${turn}\n`);
    }),
  );
}
await reportCpu();
if (process.env['BENCH_TRACE'])
  process.stderr.write(`cpu ${mode} ${process.pid} ${turnsServed} ${ms(cpuAtReady)} ${ms(process.cpuUsage(cpuAtReady))}\n`);
if (process.env['BENCH_TRACE'] && storage)
  process.stderr.write(`trips ${mode} ${process.pid} ${turnsServed} ${storage.stats().roundTrips}\n`);
await storage?.close();
await pool?.end();
