/**
 * `npm run bench -- scaling`: a large checkpoint costs time linear in its size. The same
 * document at two sizes, interleaved, best of several rounds (a load spike on a shared machine
 * hits both sizes alike, and rarely every round): for `factor` times the size, linear work
 * takes ~`factor` times the time, quadratic work its square.
 *
 * - `splitDocument` of ~0.36 MB and ~2.9 MB documents of ~6 KB members in groups of 20, split
 *   at 16 KiB: the members move to part files, then the groups;
 * - a split checkpoint written through the writer on memory and read back, ~1.2 MB and ~4.8 MB
 *   (4× apart).
 */
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { readSnapshot, splitDocument } from 'savepoint/toolkit';
import { fmt, type BenchRow } from './harness.js';
import { groupedPayload as payload } from '../tests/support/grouped-payload.js';

const LIMIT = 16 * 1024;
const ROUNDS = Number(process.env.BENCH_SCALING_ROUNDS ?? 9);

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** Best times of `small` and `large`, interleaved round by round. */
async function bestOf(small: () => Promise<unknown>, large: () => Promise<unknown>): Promise<{ small: number; large: number }> {
  await small(); // warm up
  const best = { small: Infinity, large: Infinity };
  for (let i = 0; i < ROUNDS; i++) {
    best.small = Math.min(best.small, await timed(small));
    best.large = Math.min(best.large, await timed(large));
  }
  return best;
}

/** One split checkpoint written and read back: the two times. */
async function writeAndRead(state: JsonValue, tag: string): Promise<{ write: number; read: number }> {
  const storage = memoryStorage();
  const writer = createWriter({ storage, profile: defaultProfile, runId: tag, maxSnapshotBytes: LIMIT, heartbeatIntervalMs: false });
  let t = performance.now();
  const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: state });
  const write = performance.now() - t;
  if (!r.ok) throw r.error;
  await writer.close();
  t = performance.now();
  await readSnapshot(storage, defaultProfile, r.key);
  return { write, read: performance.now() - t };
}

const row = (name: string, small: number, large: number, factor: number, target: number): BenchRow => ({
  area: 'scaling',
  name,
  savepoint: `${fmt(large)} ms`,
  baseline: `${fmt(small)} ms (1/${factor} the size)`,
  ratio: `${fmt(large / small)}× for ${factor}× the size`,
  target: `< ${target}× (quadratic: ${factor * factor}×)`,
  met: large / small < target,
});

export async function bench(): Promise<BenchRow[]> {
  const smallDoc = { state: payload(60) } as { state: JsonValue };
  const largeDoc = { state: payload(480) } as { state: JsonValue };
  const split = await bestOf(
    () => splitDocument(smallDoc, LIMIT, (n) => `p/${n}`),
    () => splitDocument(largeDoc, LIMIT, (n) => `p/${n}`),
  );
  const small = payload(200);
  const large = payload(800);
  await writeAndRead(payload(60), 'warm');
  const best = { small: { write: Infinity, read: Infinity }, large: { write: Infinity, read: Infinity } };
  for (let i = 0; i < Math.ceil(ROUNDS / 2); i++) {
    for (const [k, state] of [
      ['small', small],
      ['large', large],
    ] as const) {
      const m = await writeAndRead(state, `${k}-${i}`);
      best[k].write = Math.min(best[k].write, m.write);
      best[k].read = Math.min(best[k].read, m.read);
    }
  }
  return [
    row('splitDocument, 8× the document (~2.9 MB vs ~0.36 MB)', split.small, split.large, 8, 24),
    row('a split checkpoint written on memory, 4× the payload (~4.8 MB vs ~1.2 MB)', best.small.write, best.large.write, 4, 8),
    row('a split checkpoint read back, 4× the payload (~4.8 MB vs ~1.2 MB)', best.small.read, best.large.read, 4, 8),
  ];
}
