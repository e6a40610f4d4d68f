import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { fsStorage } from 'savepoint/fs';
import {
  applyRetention,
  defaultProfile,
  isCheckpointError,
  keepLast,
  keepLatestStatus,
  keepRunTiers,
  listAll,
  memoryStorage,
  planRetention,
  type Clock,
  type Profile,
  type RetentionPolicy,
  type StorageAdapter,
} from 'savepoint';
import { buildInventory, decodeRunIndex, readSnapshot, type PlanRetentionOptions } from 'savepoint/toolkit';
import { decodeRetentionLog } from '../../src/retention/log.js';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { faultyStorage, type FaultAction } from 'savepoint/testing';
import { DAY, HOUR, storeState, uuidFor, writeRun, type RunSpec, type SnapSpec } from '../fixtures/retention/store.js';

const NOW = Date.UTC(2025, 5, 15, 12);
const clock: Clock = { now: () => NOW, setTimeout: () => 0, clearTimeout: () => undefined };

interface Scenario<P> {
  readonly name: string;
  readonly profile: Profile<P>;
  readonly policy: RetentionPolicy;
  readonly options: PlanRetentionOptions;
  build(storage: StorageAdapter): Promise<void>;
}

const series = (n: number, start: number, step: number, status = 'in_progress'): SnapSpec[] =>
  Array.from({ length: n }, (_, i) => ({ sequence: i + 1, at: start + i * step, status: i === n - 1 ? status : 'in_progress' }));

const lifecycle: Scenario<unknown> = {
  name: 'default profile: keep-last, latest failed, compression, batch, parts, tiers with run deletion',
  profile: defaultProfile as Profile<unknown>,
  policy: {
    name: 'mixed',
    rules: [keepLast(3, { maxAge: '14d' }), keepLatestStatus('failed'), keepRunTiers({ keepAll: 1, keepFinal: 1 })],
    compressAfter: '2d',
  },
  options: { allowRunDeletion: true },
  async build(storage) {
    const p = defaultProfile;
    await writeRun(
      storage,
      p,
      'run-a',
      series(8, NOW - 8 * DAY, DAY).map((s) => (s.sequence === 2 ? { ...s, status: 'failed' } : s)),
      { batch: [3, 4], parts: [2, 5], gzTwin: [6] },
    );
    await writeRun(storage, p, 'run-b', series(4, NOW - 20 * DAY, HOUR, 'completed'), { parts: [1] });
    await writeRun(storage, p, 'run-c', series(3, NOW - 3 * HOUR, HOUR));
    await writeRun(storage, p, 'run-d', series(5, NOW - 30 * DAY, HOUR, 'failed'), { unindexed: [5] });
  },
};

const phasedRuns = Array.from({ length: 6 }, (_, i) => uuidFor(`crash-run-${i}`));
const phased: Scenario<unknown> = {
  name: 'phasedWorkflow: spec tiers (scaled down): latest.json only, summary only',
  profile: phasedWorkflow as Profile<unknown>,
  policy: { name: 'tiers', rules: [keepRunTiers({ keepAll: 2, keepFinal: 2, finalKeeps: 'latest', archiveKeeps: 'summary' })] },
  options: {},
  async build(storage) {
    for (const [i, runId] of phasedRuns.entries())
      await writeRun(storage, phasedWorkflow, runId, series(3, NOW - (10 - i) * DAY, HOUR, 'completed'));
  },
};

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

let makeStorage = (): StorageAdapter => memoryStorage();

async function fresh<P>(scenario: Scenario<P>): Promise<StorageAdapter> {
  const storage = makeStorage();
  await scenario.build(storage);
  return storage;
}

async function cleanEndState<P>(scenario: Scenario<P>): Promise<Record<string, string>> {
  const storage = await fresh(scenario);
  const plan = planRetention(await buildInventory({ storage, profile: scenario.profile }), scenario.policy, NOW, scenario.options);
  await applyRetention({ storage, profile: scenario.profile, plan, clock });
  return storeState(storage, [scenario.profile.layout.retentionLogKey!]);
}

/** Every run that still has a history entry still has a readable latest.json (invariant 1 holds through retention). */
async function assertResumable<P>(storage: StorageAdapter, profile: Profile<P>): Promise<void> {
  const runs = new Set<string>();
  for (const e of await listAll(storage, profile.layout.runsPrefix)) {
    const info = profile.layout.classify(e.key);
    if (info?.kind === 'history' && info.runId) runs.add(info.runId);
  }
  for (const runId of runs) expect((await readSnapshot(storage, profile, profile.layout.latestKey(runId)))?.runId).toBe(runId);
}

/**
 * Every index entry names a file that exists (or its `.gz` twin, which readers accept): the
 * prune's own order keeps the store consistent at every step, so `verify` finds nothing
 * after a crash mid-prune.
 */
async function assertIndexesConsistent<P>(storage: StorageAdapter, profile: Profile<P>): Promise<void> {
  const keys = new Set((await listAll(storage, profile.layout.runsPrefix)).map((e) => e.key));
  for (const key of keys) {
    if (profile.layout.classify(key)?.kind !== 'index') continue;
    for (const entry of decodeRunIndex((await storage.get(key))!.bytes).checkpoints) {
      const path = entry.file_path.replace(/^\/+/, '');
      const twin = path.endsWith('.gz') ? path.slice(0, -3) : `${path}.gz`;
      expect(keys.has(path) || keys.has(twin), `${key} names ${path}, which is gone`).toBe(true);
    }
  }
}

/** Applies the plan on a store that crashes at operation `at`, then plans and applies again on the "restarted" store. */
async function crashThenRecover<P>(
  scenario: Scenario<P>,
  at: number,
  action: FaultAction,
): Promise<{ crashed: boolean; state: Record<string, string>; inner: StorageAdapter; count: number }> {
  const inner = await fresh(scenario);
  const plan = planRetention(await buildInventory({ storage: inner, profile: scenario.profile }), scenario.policy, NOW, scenario.options);
  const storage = faultyStorage(inner, { at, action });
  let crashed = false;
  try {
    await applyRetention({ storage, profile: scenario.profile, plan, clock });
  } catch (err) {
    expect(isCheckpointError(err, 'checkpoint_retention_prune_failed')).toBe(true);
    crashed = true;
  }
  expect(crashed).toBe(storage.crashed);
  await assertResumable(inner, scenario.profile);
  await assertIndexesConsistent(inner, scenario.profile);
  if (crashed) {
    const again = planRetention(
      await buildInventory({ storage: inner, profile: scenario.profile }),
      scenario.policy,
      NOW,
      scenario.options,
    );
    const report = await applyRetention({ storage: inner, profile: scenario.profile, plan: again, clock });
    expect(report.status).toBe('completed');
  }
  return { crashed, state: await storeState(inner, [scenario.profile.layout.retentionLogKey!]), inner, count: storage.count };
}

describe('crash safety of applyRetention', () => {
  for (const scenario of [lifecycle, phased]) {
    it(`${scenario.name}: a crash at every operation, then plan + apply again, ends like one clean apply`, async () => {
      const expected = await cleanEndState(scenario);
      for (const action of ['crash', 'crash-after'] as const) {
        let at = 0;
        for (; at < 10_000; at++) {
          const { crashed, state, inner, count } = await crashThenRecover(scenario, at, action);
          expect(state).toEqual(expected);
          if (at === 0) {
            const log = decodeRetentionLog((await inner.get(scenario.profile.layout.retentionLogKey!))!.bytes);
            expect(log.entries.at(-1)!.status).toBe('completed');
          }
          if (!crashed && at >= count) break; // the fault index is past the last operation
        }
        expect(at).toBeGreaterThan(20); // the plan really had many operations to crash in
      }
    });
  }

  it('on fsStorage: crashes at sampled operations recover to the same files as a clean apply in memory', async () => {
    const expected = await cleanEndState(lifecycle);
    makeStorage = () => {
      const dir = mkdtempSync(join(tmpdir(), 'savepoint-retention-crash-'));
      dirs.push(dir);
      return fsStorage({ dir });
    };
    try {
      expect(await cleanEndState(lifecycle)).toEqual(expected);
      for (const at of [2, 5, 9, 14, 22, 31, 40]) {
        for (const action of ['crash', 'crash-after'] as const) {
          const { crashed, state } = await crashThenRecover(lifecycle, at, action);
          expect(crashed).toBe(true);
          expect(state).toEqual(expected);
        }
      }
    } finally {
      makeStorage = () => memoryStorage();
    }
  });

  it('random stores and policies: crash anywhere, recover, same end state (property)', async () => {
    const snapArb = fc.record({
      ageHours: fc.integer({ min: 0, max: 40 * 24 }),
      status: fc.constantFrom('in_progress', 'failed', 'completed'),
    });
    const runArb = fc.record({
      snaps: fc.array(snapArb, { minLength: 1, maxLength: 6 }),
      batch: fc.boolean(),
      parts: fc.boolean(),
      gzTwin: fc.boolean(),
      unindexed: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(runArb, { minLength: 1, maxLength: 4 }),
        fc.record({
          keepLast: fc.nat({ max: 4 }),
          keepAll: fc.nat({ max: 2 }),
          keepFinal: fc.nat({ max: 2 }),
          tiers: fc.boolean(),
          compress: fc.boolean(),
        }),
        fc.boolean(),
        fc.nat({ max: 80 }),
        fc.constantFrom<FaultAction>('crash', 'crash-after'),
        async (runs, p, allowRunDeletion, at, action) => {
          const scenario: Scenario<unknown> = {
            name: 'random',
            profile: defaultProfile as Profile<unknown>,
            policy: {
              name: 'random',
              rules: [
                keepLast(p.keepLast, { maxAge: '14d' }),
                keepLatestStatus('failed'),
                ...(p.tiers ? [keepRunTiers({ keepAll: p.keepAll, keepFinal: p.keepFinal })] : []),
              ],
              ...(p.compress ? { compressAfter: '1d' } : {}),
            },
            options: { allowRunDeletion },
            async build(storage) {
              for (const [i, r] of runs.entries()) {
                const times = r.snaps.map((s) => NOW - s.ageHours * HOUR).sort((a, b) => a - b);
                const specs = r.snaps.map((s, k) => ({ sequence: k + 1, at: times[k]!, status: s.status }));
                const spec: RunSpec = {
                  ...(r.batch && specs.length >= 3 ? { batch: [1, 2] } : {}),
                  ...(r.parts ? { parts: [specs.length] } : {}),
                  ...(r.gzTwin && specs.length >= 4 ? { gzTwin: [3] } : {}),
                  ...(r.unindexed ? { unindexed: [specs.length] } : {}),
                };
                await writeRun(storage, defaultProfile, `run-${i}`, specs, spec);
              }
            },
          };
          const expected = await cleanEndState(scenario);
          const { state } = await crashThenRecover(scenario, at, action);
          expect(state).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });
});
