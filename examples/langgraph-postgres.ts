/**
 * A LangGraph.js graph on PostgreSQL, paused by a human-in-the-loop interrupt in one process
 * and resumed in another, as a web service's replicas would: an agent calls a refund tool,
 * a review node asks a human to approve (`interrupt`), and whichever process gets the answer
 * resumes the thread (`Command({ resume })`) from the checkpoints SavepointSaver stored.
 *
 *   SAVEPOINT_POSTGRES_URL=postgres://user:password@localhost:5432/db npx tsx examples/langgraph-postgres.ts
 *
 * Runs the first request here, then resumes the thread in a child process (`--resume THREAD`),
 * and checks the thread from a third saver. The connection string comes from
 * `SAVEPOINT_POSTGRES_URL` only (never printed); `SAVEPOINT_POSTGRES_TABLE` names the table
 * (default `savepoint_objects`, created at first use).
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Annotation, Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  refund: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  decision: Annotation<string>({ reducer: (_, next) => next, default: () => '' }),
});
type GraphState = typeof State.State;

/** The tool the agent calls: the refund an order is owed (deterministic, no network). */
const refundFor = tool(async ({ order }: { order: string }) => JSON.stringify({ order, refund: order.length * 10 }), {
  name: 'refund_for',
  description: 'Refund owed for an order, in euros',
  schema: z.object({ order: z.string() }),
});

function buildGraph() {
  return (
    new StateGraph(State)
      // What an LLM would answer: first a tool call, then, with the tool's answer, a proposal.
      .addNode('agent', (s: GraphState) => {
        const result = s.messages.find((m: BaseMessage) => m.getType() === 'tool');
        if (!result) {
          return {
            messages: [new AIMessage({ content: '', tool_calls: [{ id: 'call-1', name: 'refund_for', args: { order: 'A-1042' } }] })],
          };
        }
        const refund = (JSON.parse(String(result.content)) as { refund: number }).refund;
        return { refund, messages: [new AIMessage(`propose a refund of ${refund} EUR`)] };
      })
      .addNode('tools', new ToolNode([refundFor]))
      // The graph stops here until a human answers; the answer may reach any process.
      .addNode('review', (s: GraphState) => {
        const answer = interrupt({ question: `approve a refund of ${s.refund} EUR?` }) as string;
        return { decision: answer, messages: [new HumanMessage(`reviewer: ${answer}`)] };
      })
      .addNode('finish', (s: GraphState) => ({ messages: [new AIMessage(`refund of ${s.refund} EUR ${s.decision}`)] }))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', (s: GraphState) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : 'review'), [
        'tools',
        'review',
      ])
      .addEdge('tools', 'agent')
      .addEdge('review', 'finish')
      .addEdge('finish', END)
  );
}

/** A saver on the PostgreSQL store, the graph compiled with it, and a way to close the store. */
function open() {
  const connectionString = process.env['SAVEPOINT_POSTGRES_URL'];
  if (!connectionString) throw new Error('set SAVEPOINT_POSTGRES_URL to a PostgreSQL connection string (see the header of this file)');
  const storage = postgresStorage({ connectionString, table: process.env['SAVEPOINT_POSTGRES_TABLE'] ?? 'savepoint_objects' });
  const checkpointer = new SavepointSaver({ storage });
  return { checkpointer, graph: buildGraph().compile({ checkpointer }), close: () => storage.close() };
}

/** The first request: the agent calls its tool, proposes a refund, and the graph stops at the review. */
async function start(threadId: string): Promise<void> {
  const { graph, close } = open();
  try {
    const config = { configurable: { thread_id: threadId } };
    await graph.invoke({ messages: [new HumanMessage('refund order A-1042')] }, config);
    const paused = await graph.getState(config);
    const question = (paused.tasks[0]?.interrupts[0]?.value as { question: string } | undefined)?.question;
    console.log(`process ${process.pid}: tool called (${paused.values.refund} EUR), paused at ${paused.next.join(', ')}: "${question}"`);
  } finally {
    await close();
  }
}

/** The answer, in another process: resumes the thread from its stored checkpoints. */
async function resume(threadId: string): Promise<void> {
  const { graph, close } = open();
  try {
    const final = (await graph.invoke(new Command({ resume: 'approved' }), { configurable: { thread_id: threadId } })) as GraphState;
    console.log(`process ${process.pid}: resumed, ${String(final.messages.at(-1)?.content)}`);
  } finally {
    await close();
  }
}

/** A third saver reads the thread back: finished, and its history in order. */
async function check(threadId: string): Promise<void> {
  const { graph, checkpointer, close } = open();
  try {
    const config = { configurable: { thread_id: threadId } };
    const state = await graph.getState(config);
    let checkpoints = 0;
    for await (const _ of checkpointer.list(config)) checkpoints++;
    const tools = (state.values as GraphState).messages.filter((m) => m instanceof ToolMessage || m.getType() === 'tool').length;
    console.log(`thread ${threadId}: finished=${state.next.length === 0}, ${checkpoints} checkpoints, ${tools} tool result`);
  } finally {
    await close();
  }
}

const [flag, thread] = process.argv.slice(2);
if (flag === '--resume' && thread) await resume(thread);
else {
  const threadId = `refund-${randomUUID()}`;
  await start(threadId);
  // Another process (another replica of the service) resumes the thread.
  const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, '--resume', threadId], { stdio: 'inherit' });
  if (child.status !== 0) throw new Error(`the resuming process failed (exit ${child.status})`);
  await check(threadId);
}
