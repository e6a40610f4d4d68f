/** A LangGraph store with a forked thread, for the CLI's and the viewer's fork lists. */
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';

const State = Annotation.Root({ n: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }) });

/**
 * Thread `t`: START → a → b → END run once, then `updateState` on the checkpoint after `a`
 * (a second child beside the one `b` wrote) and a replay from it (a third). Thread `line` ran
 * once and never branched. Returns the id of the checkpoint after `a`.
 */
export async function forkedStore(): Promise<{ storage: StorageAdapter; afterA: string }> {
  const storage = memoryStorage();
  const graph = new StateGraph(State)
    .addNode('a', (s) => ({ n: s.n + 1 }))
    .addNode('b', (s) => ({ n: s.n * 2 }))
    .addEdge(START, 'a')
    .addEdge('a', 'b')
    .addEdge('b', END)
    .compile({ checkpointer: new SavepointSaver({ storage }) });
  const config = { configurable: { thread_id: 't' } };
  await graph.invoke({ n: 1 }, config);
  await graph.invoke({ n: 1 }, { configurable: { thread_id: 'line' } });
  let afterA: { config: typeof config & { configurable: { checkpoint_id?: string } } } | undefined;
  for await (const s of graph.getStateHistory(config)) if (s.metadata?.step === 1) afterA = s as never;
  await graph.updateState(afterA!.config, { n: 100 });
  await graph.invoke(null, afterA!.config);
  return { storage, afterA: afterA!.config.configurable.checkpoint_id! };
}
