/**
 * DESIGN invariant 7, property-based: two writers on one run, each able to freeze (before a
 * call, or inside its write) and to take over (stale or forced), time moved by hand. Over
 * every interleaving: at most one writer is ever acknowledged per sequence, acknowledged
 * sequences are unique and (with the atomic batch) gap-free, and history agrees.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  defaultProfile,
  memoryStorage,
  type CheckpointResult,
  type CheckpointWriter,
  type JsonValue,
  type StorageAdapter,
} from 'savepoint';
import { historyOf } from '../support/runs.js';
import { manualClock } from '../support/clock.js';
import { sequentialMemory } from '../support/storages.js';
import { pausableStorage } from './lease-helpers.js';

const run = 'run-p';
const lease = 30_000;
const isHistory = (key: string): boolean => defaultProfile.layout.classify(key)?.kind === 'history';

type Action =
  | { readonly kind: 'checkpoint'; readonly w: 0 | 1 }
  | { readonly kind: 'freeze'; readonly w: 0 | 1 }
  | { readonly kind: 'freezeInWrite'; readonly w: 0 | 1 }
  | { readonly kind: 'wake'; readonly w: 0 | 1 }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'settle' };

const writerIndex = fc.constantFrom<0 | 1>(0, 1);
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 5, arbitrary: writerIndex.map((w) => ({ kind: 'checkpoint' as const, w })) },
  { weight: 1, arbitrary: writerIndex.map((w) => ({ kind: 'freeze' as const, w })) },
  { weight: 2, arbitrary: writerIndex.map((w) => ({ kind: 'freezeInWrite' as const, w })) },
  { weight: 2, arbitrary: writerIndex.map((w) => ({ kind: 'wake' as const, w })) },
  {
    weight: 2,
    arbitrary: fc.oneof(fc.integer({ min: 1, max: lease }), fc.constant(lease + 1)).map((ms) => ({ kind: 'advance' as const, ms })),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'settle' as const }) },
);

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

async function play(shape: (s: StorageAdapter) => StorageAdapter, takeovers: readonly ('stale' | 'force')[], actions: readonly Action[]) {
  const shared = shape(memoryStorage());
  const clock = manualClock();
  const views = [pausableStorage(shared), pausableStorage(shared)];
  const writers: CheckpointWriter<JsonValue>[] = views.map((storage, w) =>
    createWriter<JsonValue>({
      storage,
      profile: defaultProfile,
      runId: run,
      clock,
      lock: true,
      lockLeaseMs: lease,
      lockIdentity: { pid: 10 + w, hostname: `host-${w}` },
      heartbeatIntervalMs: false,
      takeover: takeovers[w]!,
      maxAttempts: 1,
    }),
  );
  const results: { w: number; result: Promise<CheckpointResult<JsonValue>> }[] = [];
  let n = 0;
  for (const a of actions) {
    if (a.kind === 'checkpoint')
      results.push({ w: a.w, result: writers[a.w]!.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: n++ } }) });
    else if (a.kind === 'freeze') views[a.w]!.pauseNow();
    else if (a.kind === 'freezeInWrite') void views[a.w]!.pauseAt((c) => c.op === 'batch' || (c.op === 'put' && isHistory(c.key)));
    else if (a.kind === 'wake') views[a.w]!.resume();
    else if (a.kind === 'advance') await clock.advance(a.ms);
    else await settle();
    await settle(); // what is not frozen makes progress between actions, as in real time
  }
  for (const v of views) v.resume();
  const settled = await Promise.all(results.map(async (r) => ({ w: r.w, result: await r.result })));
  for (const w of writers) await w.close();
  return { settled, history: await historyOf(shared, defaultProfile, run), pending: clock.pending };
}

const paths: [string, (s: StorageAdapter) => StorageAdapter, boolean][] = [
  ['atomic batch (memoryStorage)', (s) => s, true],
  ['sequential writes (memoryStorage without batch)', (s) => sequentialMemory(s), false],
];

describe.each(paths)('two writers with pauses and takeovers: %s', (_name, shape, gapFree) => {
  it('acknowledges at most one writer per sequence; acknowledged sequences are unique and in history as acknowledged', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<'stale' | 'force'>('stale', 'force'), { minLength: 2, maxLength: 2 }),
        fc.array(action, { minLength: 1, maxLength: 40 }),
        async (takeovers, actions) => {
          const { settled, history, pending } = await play(shape, takeovers, actions);
          const acks = settled
            .filter((s) => s.result.ok)
            .map((s) => ({ w: s.w, r: s.result as Extract<CheckpointResult<JsonValue>, { ok: true }> }));
          const owners = new Map<number, Set<number>>();
          const ids = new Map<number, Set<string>>();
          for (const { w, r } of acks) {
            owners.set(r.sequence, (owners.get(r.sequence) ?? new Set()).add(w));
            ids.set(r.sequence, (ids.get(r.sequence) ?? new Set()).add(r.snapshotId));
          }
          for (const set of owners.values()) expect(set.size).toBe(1);
          for (const set of ids.values()) expect(set.size).toBe(1);
          const written = acks.filter((a) => a.r.outcome === 'written').map((a) => a.r.sequence);
          expect(new Set(written).size).toBe(written.length);
          const sorted = [...written].sort((x, y) => x - y);
          if (gapFree) expect(sorted).toEqual(sorted.map((_, i) => i + 1));
          // History: one entry per sequence, and every acknowledgement is there as acknowledged.
          const seqs = history.map((s) => s.sequence);
          expect(new Set(seqs).size).toBe(seqs.length);
          for (const { r } of acks) expect(history.find((s) => s.sequence === r.sequence)?.id).toBe(r.snapshotId);
          // Refusals of a fenced writer say so.
          for (const s of settled)
            if (!s.result.ok) expect(['checkpoint_run_locked', 'checkpoint_conflict']).toContain(s.result.reasonCode);
          expect(pending).toBe(0);
        },
      ),
      { numRuns: Number(process.env.LEASE_RUNS ?? 150) },
    );
  }, 120_000);
});
