/**
 * One replica of a LangGraph service, for the replica tests: a process with its own
 * SavepointSaver on a shared store (REPLICA_STORE, JSON: fs, postgres or github), serving
 * turns the parent sends on stdin (`{"turn":N,"thread":"t"}` lines) with `graph.invoke`.
 * It prints `{"put":ID,"thread":T,"turn":N}` once a put is acknowledged (the saver's promise
 * resolved) and `{"done":N,"count":C}` when a turn's invoke returned the thread's state (each turn adds 3 to
 * `count`: its input and two nodes). Its steps go to stderr (`turn N`, `put N`, `closing`): a test
 * that stalls reports the last ones.
 */
import { createInterface } from 'node:readline';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { ChannelVersions, Checkpoint, CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import type { StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { githubStorage } from 'savepoint/github';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';

type StoreSpec =
  | { kind: 'fs'; dir: string }
  | { kind: 'postgres'; connectionString: string; table: string }
  | { kind: 'github'; owner: string; repo: string; token: string; baseUrl: string };

function storageOf(spec: StoreSpec): StorageAdapter {
  if (spec.kind === 'fs') return fsStorage({ dir: spec.dir });
  if (spec.kind === 'postgres') return postgresStorage({ connectionString: spec.connectionString, table: spec.table, poolSize: 2 });
  // Unpaced writes (GitHub asks for a second between them; the emulator does not): replicas
  // race for the branch as hard as they can, and the tests run in seconds.
  return githubStorage({ owner: spec.owner, repo: spec.repo, token: spec.token, baseUrl: spec.baseUrl, minWriteIntervalMs: 0 });
}

const say = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const step = (what: string): void => void process.stderr.write(`${what}\n`);

/** The saver, reporting each acknowledged put with the turn it belongs to. */
class ReportingSaver extends SavepointSaver {
  turn = 0;
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, versions: ChannelVersions) {
    const turn = this.turn;
    step(`put ${turn} ${checkpoint.id}`);
    const saved = await super.put(config, checkpoint, metadata, versions);
    say({ put: checkpoint.id, thread: config.configurable?.['thread_id'], turn });
    return saved;
  }
}

const keepLastEnv = process.env['REPLICA_KEEP_LAST'];
const saver = new ReportingSaver({
  storage: storageOf(JSON.parse(process.env['REPLICA_STORE']!) as StoreSpec),
  keepLast: keepLastEnv ? Number(keepLastEnv) : false,
});

const State = Annotation.Root({ count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });
const graph = new StateGraph(State)
  .addNode('first', () => ({ count: 1 }))
  .addNode('second', () => ({ count: 1 }))
  .addEdge(START, 'first')
  .addEdge('first', 'second')
  .addEdge('second', END)
  .compile({ checkpointer: saver });

for await (const line of createInterface({ input: process.stdin })) {
  const { turn, thread } = JSON.parse(line) as { turn: number; thread: string };
  saver.turn = turn;
  step(`turn ${turn} ${thread}`);
  const state = await graph.invoke({ count: 1 }, { configurable: { thread_id: thread } });
  say({ done: turn, count: state.count });
}
step('closing');
await saver.storage.close?.();
