/**
 * A LangGraph thread's forks in the CLI: `ls THREAD --forks` lists each checkpoint with two or
 * more children (a branch from `updateState` on an older checkpoint, or a replay from it) and
 * each branch's first checkpoint; `show` names a checkpoint's children. Real graphs on a real
 * saver; the --json outputs validate against schemas/cli.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import Ajv2020 from 'ajv/dist/2020.js';
import { runCli } from '../../src/cli/run.js';
import { captureIo } from '../support/cli-io.js';
import { forkedStore } from '../support/forked-thread.js';

const ajv = new (Ajv2020 as unknown as typeof import('ajv').default)({ strict: false });
const schema = (name: string) =>
  ajv.compile(JSON.parse(readFileSync(new URL(`../../schemas/cli/${name}.v1.json`, import.meta.url), 'utf8')));

interface Checkpoint {
  checkpointId: string;
  parentCheckpointId: string | null;
  step: number | null;
  source: string;
  ts: string;
  sequence: number;
}
interface Fork {
  parent: Partial<Checkpoint> & { checkpointId: string };
  children: Checkpoint[];
}

async function cli(storage: StorageAdapter, args: string[], profile = 'langgraph'): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo();
  const code = await runCli([...args, '--profile', profile], io, { storage });
  return { code, out: io.out, err: io.err };
}

describe("ls THREAD --forks: a LangGraph thread's branches", () => {
  it('lists the checkpoint after `a` as a fork with its three children (loop, update, replay), oldest first', async () => {
    const { storage, afterA } = await forkedStore();
    const r = await cli(storage, ['ls', 't', '--forks', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { runId: string; forks: Fork[] };
    const validate = schema('ls');
    expect(validate(out), JSON.stringify(validate.errors)).toBe(true);
    expect(out.forks).toHaveLength(1);
    const [fork] = out.forks;
    expect(fork!.parent).toMatchObject({ checkpointId: afterA, step: 1, source: 'loop' });
    expect(fork!.children.map((c) => c.parentCheckpointId)).toEqual([afterA, afterA, afterA]);
    expect(fork!.children.map((c) => c.step)).toEqual([2, 2, 2]);
    expect(fork!.children[0]!.source).toBe('loop');
    expect(fork!.children[1]!.source).toBe('update');
    expect(['fork', 'loop']).toContain(fork!.children[2]!.source); // a replay: `fork` in the LangGraph versions that mark it
    const sequences = fork!.children.map((c) => c.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);

    const text = await cli(storage, ['ls', 't', '--forks']);
    expect(text.out).toContain(`fork at ${afterA}  (step 1, loop)`);
    for (const c of fork!.children)
      expect(text.out).toMatch(new RegExp(`^ {2}${c.checkpointId}\\s+step 2\\s+${c.source}\\s+seq ${c.sequence}\\s`, 'm'));
  });

  it('a thread that never branched has no forks; --forks on another profile is a usage error', async () => {
    const { storage } = await forkedStore();
    expect(JSON.parse((await cli(storage, ['ls', 'line', '--forks', '--json'])).out)).toMatchObject({ forks: [] });
    expect((await cli(storage, ['ls', 'line', '--forks'])).out).toContain('has no forks');
    const other = memoryStorage();
    await other.put('checkpoints/r1/latest.json', new TextEncoder().encode('{}'));
    const wrong = await cli(other, ['ls', 'r1', '--forks'], 'default');
    expect(wrong.code).toBe(2);
    expect(wrong.err).toContain('--profile langgraph');
  });
});

describe("show: a LangGraph checkpoint's children", () => {
  it('the fork point names its children (json validates against show.v1.json); a leaf has none', async () => {
    const { storage, afterA } = await forkedStore();
    const json = JSON.parse((await cli(storage, ['show', 't', '--id', afterA, '--json'])).out) as { langgraph: { children: Checkpoint[] } };
    const validate = schema('show');
    expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
    expect(json.langgraph.children.map((c) => c.source).slice(0, 2)).toEqual(['loop', 'update']);
    expect(json.langgraph.children).toHaveLength(3);
    const text = (await cli(storage, ['show', 't', '--id', afterA])).out;
    expect(text).toMatch(new RegExp(`^forks\\s+${json.langgraph.children[0]!.checkpointId} \\(step 2, loop\\), `, 'm'));
    const newest = JSON.parse((await cli(storage, ['show', 't', '--json'])).out) as { langgraph: { children: Checkpoint[] } };
    expect(newest.langgraph.children).toEqual([]);
  });
});
