/**
 * Runs with concurrent actors in one process: `two-writer` (two writers, two adapters, one
 * run) and `prune-during-write` (retention pruning a run while its writer writes).
 */
import { fsStorage } from '../../src/entries/fs.js';
import { keepLast, planResume, runRetention } from '../../src/index.js';
import { budget, describe, profile, record, result, tempDir, writer, type CampaignRun } from './shared.js';

export const twoWriterRun: CampaignRun = {
  name: 'two-writer',
  what: 'two writers with their own adapters write one run at once; no sequence may be acknowledged to both, and the run must resume',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 5, full: 40 }, { quick: 20, full: 120 });
    while (more()) {
      const tmp = tempDir('two');
      const a = fsStorage({ dir: tmp.dir, cleanupOnOpen: false });
      const b = fsStorage({ dir: tmp.dir, cleanupOnOpen: false });
      try {
        const acks = [new Map<number, string>(), new Map<number, string>()];
        const writers = [writer(a, 'run-two'), writer(b, 'run-two')];
        await Promise.all(
          writers.map(async (w, k) => {
            for (let i = 0; i < 8; i++) {
              const c = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { writer: k, i } });
              if (c.ok) acks[k]!.set(c.snapshot.sequence, c.snapshot.id);
            }
            await w.close().catch(() => undefined);
          }),
        );
        const both = [...acks[0]!].filter(([seq, id]) => acks[1]!.has(seq) && acks[1]!.get(seq) !== id).map(([s]) => s);
        const top = Math.max(0, ...acks[0]!.keys(), ...acks[1]!.keys());
        let problem: string | undefined = both.length > 0 ? `sequences acknowledged to both: ${both.slice(0, 5).join(', ')}` : undefined;
        if (!problem && top > 0) {
          const plan = await planResume({ storage: a, profile, runId: 'run-two' });
          if (plan.snapshot.sequence < top) problem = `resumed ${plan.snapshot.sequence}, acknowledged ${top}`;
        }
        record(r, problem);
      } catch (err) {
        record(r, `threw ${describe(err)}`);
      } finally {
        await a.close();
        await b.close();
        tmp.dispose();
      }
    }
    return r;
  },
};

export const pruneDuringWriteRun: CampaignRun = {
  name: 'prune-during-write',
  what: 'keepLast(2) pruning in a loop while the writer writes; the run must resume from its last acknowledged snapshot',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 4, full: 30 }, { quick: 30, full: 180 });
    while (more()) {
      const tmp = tempDir('prune');
      const storage = fsStorage({ dir: tmp.dir, cleanupOnOpen: false });
      try {
        const w = writer(storage, 'run-prune');
        let last = 0;
        let writing = true;
        let pruneProblem: string | undefined;
        const pruner = (async () => {
          while (writing) {
            try {
              await runRetention({ storage, profile, policy: { rules: [keepLast(2)] }, log: false });
            } catch (err) {
              // A prune that loses a race stops with a CheckpointError; anything else is a defect.
              if (describe(err).startsWith('raw')) pruneProblem = `prune threw ${describe(err)}`;
            }
          }
        })();
        for (let i = 0; i < 25; i++) {
          const c = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
          if (c.ok) last = c.snapshot.sequence;
        }
        writing = false;
        await pruner;
        await w.close();
        const plan = await planResume({ storage, profile, runId: 'run-prune' });
        record(
          r,
          pruneProblem ?? (plan.snapshot.sequence === last ? undefined : `resumed ${plan.snapshot.sequence}, acknowledged ${last}`),
        );
      } catch (err) {
        record(r, `threw ${describe(err)}`);
      } finally {
        await storage.close();
        tmp.dispose();
      }
    }
    return r;
  },
};
