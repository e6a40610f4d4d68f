import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, type Checkpoint } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import fc from 'fast-check';
import { memoryStorage } from 'savepoint';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { readSnapshot } from 'savepoint/toolkit';
import { runCli } from '../../src/cli/run.js';
import { duplicateSequences } from '../../src/runs/duplicate-sequences.js';

function silentIo() {
  let out = '';
  return {
    io: { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (out += t) }, readStdin: async () => '', env: {} },
    out: () => out,
  };
}

const checkpoint = (n: number): Checkpoint => ({ ...emptyCheckpoint(), id: `1f0cb3a0-0000-6000-8000-00000000000${n}` });

describe('duplicate sequences', () => {
  it('property: duplicateSequences names exactly the sequences given more than once, with every key that holds them', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 20 }), (sequences) => {
        const documents = sequences.map((sequence, i) => ({ key: `k${i}`, sequence }));
        const found = duplicateSequences(documents);
        for (const s of new Set(sequences)) {
          const keys = documents.filter((d) => d.sequence === s).map((d) => d.key);
          expect(found.find((d) => d.sequence === s)?.keys).toEqual(keys.length > 1 ? keys : undefined);
        }
        expect(found.map((d) => d.sequence)).toEqual([...found.map((d) => d.sequence)].sort((a, b) => a - b));
      }),
    );
  });

  it('`savepoint verify --profile langgraph` reports two checkpoints under one sequence as a problem (regression: 0 problems)', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    let config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    for (const n of [1, 2, 3]) config = await saver.put(config, checkpoint(n), { source: 'loop', step: n, parents: {} }, {});
    const clean = silentIo();
    expect(await runCli(['verify', '--profile', 'langgraph'], clean.io, { storage })).toBe(0);
    // What two savers that each counted for themselves left: the third checkpoint under the second's sequence.
    const key = `langgraph/t/history/${checkpoint(3).id}.json`;
    const third = (await readSnapshot(storage, langGraphProfile, key))!;
    const { integrity: _integrity, ...draft } = third;
    await storage.put(key, (await langGraphProfile.document.encode({ ...draft, sequence: third.sequence - 1 })).bytes);
    const io = silentIo();
    expect(await runCli(['verify', '--profile', 'langgraph'], io.io, { storage })).toBe(1);
    expect(io.out()).toMatch(/checkpoint_conflict/);
    expect(io.out()).toMatch(/sequence 2 is held by 2 documents/);
  });
});
