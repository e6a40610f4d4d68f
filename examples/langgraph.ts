/**
 * A LangGraph.js graph that survives `kill -9`: a StateGraph with a planner, an agent that
 * calls a tool, the tool node, and a reporter, checkpointed every superstep by
 * SavepointSaver into a directory. Run it, kill it at any moment, run it again with the same
 * thread: it resumes from the last checkpoint and ends in the same state as a run that was
 * never interrupted.
 *
 *   npx tsx examples/langgraph.ts --dir .langgraph-demo --thread order-42
 *
 * Options: `--dir` store directory, `--thread` thread id, `--delay MS` pause in each node
 * (to have time to kill it), `--marker FILE` appends one line per node that ran, `--layout files`
 * a file per key in a new directory (to look at the checkpoints on disk; by default a new
 * directory gets the packed layout, as any directory only savepoint reads).
 */
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';

/** The graph's state: the conversation, the items to price, and the running total. */
const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  items: Annotation<string[]>({ reducer: (_, next) => next, default: () => [] }),
  total: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  report: Annotation<string>({ reducer: (_, next) => next, default: () => '' }),
});
type GraphState = typeof State.State;

const PRICES: Record<string, number> = { apple: 3, bread: 5, cheese: 11, dates: 7, eggs: 4 };

/** The tool the agent calls: a price lookup (deterministic, so every run ends the same). */
const lookupPrice = tool(async ({ item }: { item: string }) => JSON.stringify({ item, price: PRICES[item] ?? 0 }), {
  name: 'lookup_price',
  description: 'Price of one item in whole euros',
  schema: z.object({ item: z.string() }),
});

/** Builds the graph; `onNode` sees each node as it runs (the example's marker file). */
export function buildGraph(options: { delayMs?: number; onNode?: (name: string, state: GraphState) => void } = {}) {
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, options.delayMs ?? 0));
  const node =
    (name: string, fn: (s: GraphState) => Partial<GraphState>) =>
    async (s: GraphState): Promise<Partial<GraphState>> => {
      await pause();
      options.onNode?.(name, s);
      return fn(s);
    };
  const priced = (messages: BaseMessage[]): number => messages.filter((m) => m.getType() === 'tool').length;

  return new StateGraph(State)
    .addNode(
      'plan',
      node('plan', (s) => {
        const request = String(s.messages.at(-1)?.content ?? '');
        return {
          items: request
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean),
        };
      }),
    )
    .addNode(
      'agent',
      node('agent', (s) => {
        const done = priced(s.messages);
        const next = s.items[done];
        if (next === undefined) return { messages: [new AIMessage({ id: `ai-final`, content: 'all items priced' })] };
        // What an LLM would answer: a tool call (ids fixed so a resumed run matches an uninterrupted one).
        return {
          messages: [
            new AIMessage({
              id: `ai-${done}`,
              content: '',
              tool_calls: [{ id: `call-${done}`, name: 'lookup_price', args: { item: next } }],
            }),
          ],
        };
      }),
    )
    .addNode('tools', async (s: GraphState) => {
      await pause();
      options.onNode?.('tools', s);
      const out = (await new ToolNode([lookupPrice]).invoke(s)) as { messages: BaseMessage[] };
      const price = (JSON.parse(String(out.messages[0]!.content)) as { price: number }).price;
      // Fixed ids (set in the constructor, which is what the serializer keeps) so runs compare equal.
      const messages = out.messages.map(
        (m, i) =>
          new ToolMessage({
            id: `tool-${priced(s.messages) + i}`,
            content: m.content,
            tool_call_id: (m as ToolMessage).tool_call_id,
            name: m.name ?? 'lookup_price',
          }),
      );
      return { messages, total: s.total + price };
    })
    .addNode(
      'summarize',
      node('summarize', (s) => ({ report: `${s.items.length} items, total ${s.total} EUR` })),
    )
    .addEdge(START, 'plan')
    .addEdge('plan', 'agent')
    .addConditionalEdges('agent', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : 'summarize'), [
      'tools',
      'summarize',
    ])
    .addEdge('tools', 'agent')
    .addEdge('summarize', END);
}

/** Runs (or resumes) thread `threadId` to the end with its checkpoints in `dir`; returns the final state. */
export async function runToEnd(
  dir: string,
  threadId: string,
  options: Parameters<typeof buildGraph>[0] = {},
  layout?: 'files' | 'packed',
): Promise<GraphState> {
  const storage = fsStorage({ dir, ...(layout ? { layout } : {}) });
  try {
    const checkpointer = new SavepointSaver({ storage });
    const app = buildGraph(options).compile({ checkpointer });
    const config = { configurable: { thread_id: threadId } };
    const saved = await app.getState(config);
    // A new thread (no checkpoint yet) starts from the request.
    if (saved.metadata === undefined)
      return (await app.invoke(
        { messages: [new HumanMessage({ id: 'request', content: 'apple, bread, cheese, dates, eggs' })] },
        config,
      )) as GraphState;
    // A thread with tasks left resumes (input null). Not `saved.next`: it leaves out a task whose
    // writes were saved before a crash that came before the checkpoint after it, so such a thread
    // shows an empty `next` yet is not finished; `saved.tasks` still lists that task.
    if (saved.tasks.length > 0) return (await app.invoke(null, config)) as GraphState;
    return saved.values as GraphState;
  } finally {
    await storage.close();
  }
}

/** The command line: `--dir`, `--thread`, `--delay`, `--marker`; prints the final state as one JSON line. */
export async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string', default: '.langgraph-demo' },
      thread: { type: 'string', default: 'order-42' },
      delay: { type: 'string', default: '0' },
      marker: { type: 'string' },
      layout: { type: 'string' },
    },
  });
  const layout = values.layout;
  if (layout !== undefined && layout !== 'files' && layout !== 'packed') throw new Error('--layout takes files or packed');
  const marker = values.marker;
  const final = await runToEnd(
    values.dir,
    values.thread,
    {
      delayMs: Number(values.delay),
      ...(marker ? { onNode: (name: string) => appendFileSync(marker, `${name}\n`) } : {}),
    },
    layout,
  );
  const summary = {
    report: final.report,
    total: final.total,
    items: final.items,
    messages: final.messages.map((m) => ({ type: m.getType(), id: m.id, content: m.content })),
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

// Run as a script (not when imported, nor when bundled into the crash test's child process).
if (process.argv[1] && /examples[\\/]langgraph\.[cm]?[jt]s$/.test(process.argv[1])) await main(process.argv.slice(2));
