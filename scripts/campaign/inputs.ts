/**
 * Runs with hostile or huge input: `fuzz` (random and mutated bytes as stored documents,
 * random text as a hand-off document) and `huge-input` (a 12 MB payload written and read
 * back, and a gzip bomb planted in history), each bounded in time (invariant 9).
 */
import fc from 'fast-check';
import { parseHandoff } from '../../src/entries/handoff-markdown.js';
import { memoryStorage, planResume } from '../../src/index.js';
import { gzip } from '../../src/entries/toolkit.js';
import { utf8Encode } from '../../src/codec/utf8.js';
import { budget, describe, profile, record, result, writer, type CampaignRun } from './shared.js';

const LATEST = 'checkpoints/run-f/latest.json';

export const fuzzRun: CampaignRun = {
  name: 'fuzz',
  what: 'random and mutated bytes as latest.json and history, random text as a hand-off document; only reason codes may come out',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 300, full: 5000 }, { quick: 20, full: 180 });
    const base = memoryStorage();
    const w = writer(base, 'run-f');
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { nested: { list: [1, 2, 3], text: 'x' } } });
    await w.close();
    const good = (await base.get(LATEST))!.bytes;
    const inputs = fc.oneof(
      fc.uint8Array({ maxLength: 2000 }),
      fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 1, max: 255 })).map(([at, x]) => {
        const c = good.slice();
        c[at]! ^= x;
        return c;
      }),
      fc.json().map((s) => utf8Encode(s)),
      fc.uint8Array({ maxLength: 2000 }).map((b) => gzip(b)),
    );
    for (const [bytes, text] of fc.sample(fc.tuple(inputs, fc.string({ maxLength: 500 })), quick ? 300 : 5000)) {
      if (!more()) break;
      const storage = memoryStorage();
      await storage.put(LATEST, bytes);
      let problem: string | undefined;
      try {
        const plan = await planResume({ storage, profile, runId: 'run-f' });
        if (plan.snapshot.runId !== 'run-f') problem = 'resumed a snapshot of another run';
      } catch (err) {
        if (describe(err).startsWith('raw')) problem = `planResume: ${describe(err)}`;
      }
      try {
        parseHandoff(`---\ncheckpoint: 1\ncreated: 2025-01-01T00:00:00Z\n${text}\n---\n${text}`);
      } catch (err) {
        if (describe(err).startsWith('raw')) problem ??= `parseHandoff: ${describe(err)}`;
      }
      record(r, problem);
    }
    return r;
  },
};

export const hugeInputRun: CampaignRun = {
  name: 'huge-input',
  what: 'a 12 MB payload (split into parts) written and read back, and a gzip bomb planted in history, each within 30 s',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 2, full: 6 }, { quick: 90, full: 300 });
    // Made once, before any clock starts: 64 MB of zeros in ~64 KB.
    const bomb = gzip(new Uint8Array(64 * 1024 * 1024));
    for (let trial = 0; more(); trial++) {
      const storage = memoryStorage();
      const started = Date.now();
      try {
        if (trial % 2 === 0) {
          const w = writer(storage, 'run-h');
          const items = Array.from({ length: 12_000 }, (_, i) => ({ i, text: 'y'.repeat(1000) }));
          const c = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { items } });
          await w.close();
          if (!c.ok) record(r, `the 12 MB write failed: ${c.reasonCode}`);
          else {
            const plan = await planResume({ storage, profile, runId: 'run-h' });
            const back = (plan.payload as { items: unknown[] }).items.length;
            record(
              r,
              back !== items.length
                ? `read back ${back} of ${items.length} items`
                : Date.now() - started > 30_000
                  ? `took ${Date.now() - started} ms`
                  : undefined,
            );
          }
        } else {
          const w = writer(storage, 'run-h');
          await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i: 1 } });
          await w.close();
          await storage.delete('checkpoints/run-h/latest.json');
          const planted = Date.now();
          await storage.put('checkpoints/run-h/history/cp_20990101T000000000Z_bomb000000.json.gz', bomb);
          const plan = await planResume({ storage, profile, runId: 'run-h', newerCheck: 'scan' });
          const ms = Date.now() - planted;
          record(
            r,
            plan.snapshot.sequence !== 1 ? `resumed ${plan.snapshot.sequence}` : ms > 30_000 ? `the bomb took ${ms} ms` : undefined,
          );
        }
      } catch (err) {
        record(r, `threw ${describe(err)}`);
      }
    }
    return r;
  },
};
