/**
 * The packed fs layout: run with `npx tsx examples/packed-layout.ts`.
 *
 * A LangGraph conversation checkpointed by SavepointSaver into `fsStorage({ dir, layout:
 * 'packed' })`: values kept in a few segment files instead of a file per key. (`fsStorage({ dir })`
 * gives a new directory the same layout once the saver is made on it: it declares that only
 * savepoint reads it; the layout is named here to show it.) It runs 20 turns,
 * closes the store as a restart would, opens it again and reads the thread's state and its
 * oldest checkpoint, then shows what is on disk, and that a spec profile (whose files other
 * tools read) refuses the packed store.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { CheckpointError, createWriter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';

const dir = mkdtempSync(join(tmpdir(), 'savepoint-packed-'));
const config = { configurable: { thread_id: 'chat-1' } };

/** A one-node graph that answers each message (deterministic, so every run prints the same). */
function compile(saver: SavepointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode('reply', (s) => ({ messages: [new AIMessage(`reply to: ${String(s.messages.at(-1)?.content)}`)] }))
    .addEdge(START, 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer: saver });
}

try {
  const storage = fsStorage({ dir, layout: 'packed' });
  const report = await storage.ready();
  console.log(`opened ${report.layout === 'packed' ? 'a packed' : 'a file'} store`);
  const app = compile(new SavepointSaver({ storage }));
  for (let turn = 1; turn <= 20; turn++) await app.invoke({ messages: [new HumanMessage(`message ${turn}`)] }, config);
  await storage.close();

  // A restart: a new store and saver on the same directory.
  const again = fsStorage({ dir, layout: 'packed' });
  const saver = new SavepointSaver({ storage: again });
  const state = await compile(saver).getState(config);
  console.log(`after the restart: ${state.values.messages.length} messages, the last "${String(state.values.messages.at(-1)?.content)}"`);
  let checkpoints = 0;
  let oldest: string | undefined;
  for await (const tuple of saver.list(config)) {
    checkpoints++;
    oldest = tuple.config.configurable?.checkpoint_id as string;
  }
  const first = await compile(saver).getState({ configurable: { thread_id: 'chat-1', checkpoint_id: oldest } });
  console.log(`${checkpoints} checkpoints kept; the oldest (before the first input) holds ${first.values.messages?.length ?? 0} messages`);
  const names = readdirSync(dir).sort();
  console.log(`files in the directory: ${names.join(', ')} (no file per key)`);

  // A spec profile's files are read by other tools: it refuses a store that keeps none.
  try {
    createWriter({ storage: again, profile: snapshotLifecycle, runId: 'run-1' });
    console.log('the spec profile took the packed store (unexpected)');
  } catch (err) {
    console.log(`snapshot-lifecycle on the packed store: ${err instanceof CheckpointError ? err.reasonCode : String(err)}`);
  }
  await again.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
