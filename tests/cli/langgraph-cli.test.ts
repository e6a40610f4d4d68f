import { Annotation, END, START, StateGraph, interrupt } from '@langchain/langgraph';
import { describe, expect, it } from 'vitest';
import { memoryStorage, planResume, type StorageAdapter } from 'savepoint';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { runCli } from '../../src/cli/run.js';
import { captureIo } from '../support/cli-io.js';

const State = Annotation.Root({
  n: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** Thread `done` ran a graph to its end; thread `asking` stopped at an interrupt in node `ask`. */
async function store(): Promise<StorageAdapter> {
  const storage = memoryStorage();
  const finished = new StateGraph(State)
    .addNode('inc', (s) => ({ n: s.n + 1, log: ['inc'] }))
    .addEdge(START, 'inc')
    .addEdge('inc', END)
    .compile({ checkpointer: new SavepointSaver({ storage }) });
  await finished.invoke({ n: 5 }, { configurable: { thread_id: 'done' } });
  const asking = new StateGraph(State)
    .addNode('inc', (s) => ({ n: s.n + 1 }))
    .addNode('ask', () => ({ log: [String(interrupt({ question: 'go?' }))] }))
    .addEdge(START, 'inc')
    .addEdge('inc', 'ask')
    .addEdge('ask', END)
    .compile({ checkpointer: new SavepointSaver({ storage }) });
  await asking.invoke({ n: 1 }, { configurable: { thread_id: 'asking' } });
  return storage;
}

async function cli(storage: StorageAdapter, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo();
  const code = await runCli([...args, '--profile', 'langgraph'], io, { storage });
  return { code, out: io.out, err: io.err };
}

describe('the CLI speaks LangGraph', () => {
  it('runs shows each thread with its newest checkpoint, step, next nodes and time', async () => {
    const storage = await store();
    const json = JSON.parse((await cli(storage, ['runs', '--json'])).out) as {
      runs: {
        runId: string;
        status: string;
        terminal: boolean;
        lastActivity: string | null;
        langgraph: { step: number; next: string[] };
      }[];
    };
    const done = json.runs.find((r) => r.runId === 'done')!;
    expect(done).toMatchObject({ status: 'done', terminal: true, langgraph: { step: 1, next: [] } });
    expect(done.lastActivity).not.toBeNull();
    expect(json.runs.find((r) => r.runId === 'asking')).toMatchObject({
      status: 'next: ask',
      terminal: false,
      langgraph: { next: ['ask'] },
    });
    const table = (await cli(storage, ['runs'])).out;
    expect(table).toMatch(/^THREAD\s+CHECKPOINT\s+STEP\s+NEXT/m);
    expect(table).not.toContain('no latest');
    expect(table).toMatch(/^done\s+\S+\s+1\s+done\s/m);
  });

  it('show THREAD works without --seq (latest, or a checkpoint id): channels decoded, next, interrupts, pending writes', async () => {
    const storage = await store();
    const plain = await cli(storage, ['show', 'asking']);
    expect(plain.code).toBe(0);
    expect(plain.out).toMatch(/^next\s+ask$/m);
    expect(plain.out).toMatch(/^ {2}n: 2$/m);
    expect(plain.out).toMatch(/^interrupts\s+.*"question":"go\?"/m);
    const json = JSON.parse((await cli(storage, ['show', 'asking', '--seq', 'latest', '--json'])).out) as {
      langgraph: { checkpointId: string; channels: Record<string, unknown>; interrupts: unknown[]; pendingWrites: { channel: string }[] };
    };
    expect(json.langgraph.channels.n).toBe(2);
    expect(json.langgraph.pendingWrites.map((w) => w.channel)).toContain('__interrupt__');
    const byId = await cli(storage, ['show', 'asking', '--id', json.langgraph.checkpointId]);
    expect(byId.out).toContain(`checkpoint  ${json.langgraph.checkpointId}`);
  });

  it('resume: a finished graph is complete (not eligible), an interrupted one continues at its next node', async () => {
    const storage = await store();
    const done = await planResume({ storage, profile: langGraphProfile, runId: 'done' });
    expect(done).toMatchObject({ reason: 'graph_complete', eligible: false });
    const asking = await planResume({ storage, profile: langGraphProfile, runId: 'asking' });
    expect(asking).toMatchObject({ reason: 'graph_next_nodes', eligible: true, remaining: ['ask'] });
    expect((await cli(storage, ['resume', 'done'])).out).toContain('(not eligible for automatic resume)');
  });

  it('diff prints channel values decoded, not escaped JSON inside JSON', async () => {
    const storage = await store();
    const r = await cli(storage, ['diff', 'done', '1', 'latest']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('+ /payload/channels/n 6');
    expect(r.out).not.toContain('\\"');
  });
});

describe('the LangGraph --json outputs', () => {
  it('validate against schemas/cli/runs.v1.json and show.v1.json', async () => {
    const { readFileSync } = await import('node:fs');
    const { default: Ajv2020 } = await import('ajv/dist/2020.js');
    const ajv = new (Ajv2020 as unknown as typeof import('ajv').default)({ strict: false });
    const storage = await store();
    for (const [name, args] of [
      ['runs', ['runs', '--json']],
      ['show', ['show', 'asking', '--json']],
    ] as const) {
      const validate = ajv.compile(JSON.parse(readFileSync(new URL(`../../schemas/cli/${name}.v1.json`, import.meta.url), 'utf8')));
      const out = JSON.parse((await cli(storage, [...args])).out) as Record<string, unknown>;
      expect(validate(out), JSON.stringify(validate.errors)).toBe(true);
      expect(JSON.stringify(out)).toContain('"next"');
    }
  });
});
