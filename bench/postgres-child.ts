/**
 * One process of the PostgreSQL bench: writes `count` checkpoints of one run/thread, one after
 * another as an agent does, with savepoint's writer or LangGraph's PostgresSaver, on the same
 * server. Counts every statement the pg driver sends (Client.prototype.query, so both sides are
 * counted the same way). Prints `ready`, waits for `go` on stdin, prints `done <ms> <statements>`.
 *
 * argv: savepoint|langgraph <url> <table or schema> <run id> <count>
 */
import { createInterface } from 'node:readline';
import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { createWriter, defaultProfile, type JsonValue } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';

const [mode, url, where, runId, countText] = process.argv.slice(2) as [string, string, string, string, string];
const count = Number(countText);
let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  statements++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

const state = (i: number): { step: number; notes: string } => ({ step: i, notes: 'n'.repeat(1000) }); // ~1 KB of state

interface Side {
  loop(): Promise<void>;
  close(): Promise<void>;
}

async function savepointSide(): Promise<Side> {
  const storage = postgresStorage({ connectionString: url, table: where, poolSize: 2 });
  const writer = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  const opened = await writer.open();
  if (!opened.ok) throw opened.error;
  return {
    async loop() {
      for (let i = 1; i <= count; i++) {
        const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state(i) as JsonValue });
        if (!r.ok) throw r.error;
      }
    },
    async close() {
      await writer.close();
      await storage.close();
    },
  };
}

async function langgraphSide(): Promise<Side> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const saver = new PostgresSaver(pool, undefined, { schema: where });
  let config = { configurable: { thread_id: runId, checkpoint_ns: '' } };
  await saver.getTuple(config); // connect, like the savepoint side's open()
  return {
    async loop() {
      for (let i = 1; i <= count; i++) {
        const checkpoint: Checkpoint = {
          ...emptyCheckpoint(),
          id: uuid6(-1),
          channel_values: { state: state(i) },
          channel_versions: { state: i },
        };
        // One LangGraph super-step: the task's pending writes, then the checkpoint.
        await saver.putWrites(
          { configurable: { ...config.configurable, checkpoint_id: checkpoint.id } },
          [['state', state(i)]],
          `task-${i}`,
        );
        config = (await saver.put(config, checkpoint, { source: 'loop', step: i, parents: {} }, { state: i })) as typeof config;
      }
    },
    close: () => pool.end(),
  };
}

const side = mode === 'savepoint' ? await savepointSide() : await langgraphSide();
const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of lines) {
  if (line !== 'go') continue;
  const before = statements;
  const start = performance.now();
  await side.loop();
  process.stdout.write(`done ${performance.now() - start} ${statements - before}\n`);
  await side.close();
  break;
}
process.exit(0);
