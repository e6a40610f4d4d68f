/**
 * Retention bench: planRetention over synthetic inventories of 10k, 100k and 1M snapshots
 * (runs of 100 snapshots, four hours apart, with an index entry each), with the
 * snapshot-lifecycle default policy and with a calendar policy in a DST time zone.
 *
 * Baseline: the slow reference planner of the property tests (tests/retention/reference.ts)
 * at 10k snapshots, interleaved with the real planner in the same process; at larger
 * sizes the reference is too slow to run and the growth from 10k → 100k → 1M is shown
 * instead. The 100k and 1M sizes run in a child process started with --expose-gc (after
 * a JIT warm-up on a small inventory): planRetention's time (every decision and the
 * totals), then the time to materialize `plan.operations` (what applyRetention reads) and
 * `plan.snapshots` (what a dry-run table reads), the heap the plan retains after a full
 * GC, and the process's peak RSS (which includes the 1M-snapshot inventory itself).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { keepDaily, keepHourly, keepWeekly, planRetention, type RetentionPolicy } from 'savepoint';
import { snapshotLifecycleRetention } from 'savepoint/snapshot-lifecycle';
import { type InventoryRun, type InventorySnapshot, type RetentionInventory } from 'savepoint/toolkit';
import { referencePlan } from '../tests/retention/reference.js';
import { fmt, interleave, median, timeMs, type BenchRow } from './harness.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2025, 2, 31, 12); // the week of Europe's DST change
const PER_RUN = 100;

const calendarPolicy: RetentionPolicy = {
  name: 'calendar',
  rules: [
    keepHourly(24, { timeZone: 'Europe/Berlin' }),
    keepDaily(7, { timeZone: 'Europe/Berlin' }),
    keepWeekly(4, { timeZone: 'Europe/Berlin' }),
  ],
  compressAfter: '24h',
};

/** `runs` runs of 100 snapshots each, four hours apart, ending within the last 500 hours. */
export function syntheticInventory(runs: number): RetentionInventory {
  const out: InventoryRun[] = [];
  const isoCache = new Map<number, string>();
  const iso = (ms: number): string => {
    let s = isoCache.get(ms);
    if (s === undefined) isoCache.set(ms, (s = new Date(ms).toISOString()));
    return s;
  };
  for (let r = 0; r < runs; r++) {
    const runId = `run-${String(r).padStart(6, '0')}`;
    const dir = `checkpoints/${runId}`;
    const end = NOW - (r % 500) * HOUR;
    const snapshots: InventorySnapshot[] = [];
    const entries = [];
    for (let seq = 1; seq <= PER_RUN; seq++) {
      const ms = end - (PER_RUN - seq) * 4 * HOUR;
      const createdAt = iso(ms);
      const id = `cp_${createdAt.replace(/[-:.]/g, '')}_${String(r).padStart(6, '0')}${String(seq).padStart(3, '0')}`;
      const key = `${dir}/history/${id}.json`;
      const status = seq === PER_RUN && r % 2 === 0 ? 'completed' : seq % 17 === 0 ? 'failed' : 'in_progress';
      snapshots.push({
        runId,
        id,
        sequence: seq,
        createdAt,
        createdAtMs: ms,
        status,
        files: [{ key, version: '1', size: 2048, compressed: false }],
        batches: [],
        parts: [],
        latest: seq === PER_RUN,
        origin: 'index',
      });
      entries.push({ sequence: seq, checkpoint_id: id, trigger: 'step_boundary', timestamp: createdAt, file_path: key, status });
    }
    out.push({
      runId,
      snapshots,
      summaryKey: `${dir}/summary.json`,
      latest: { key: `${dir}/latest.json`, version: '1', size: 2048, readable: true, snapshotId: snapshots[PER_RUN - 1]!.id },
      index: { key: `${dir}/index.json`, version: '1', size: 20_000, readable: true, entries },
      batches: [],
      orphanParts: [],
      unreadable: [],
    });
  }
  return { profile: { name: 'default', compressHistory: true }, runs: out, preservedRuns: [], preservedRunsReadable: true, problems: [] };
}

interface ChildResult {
  readonly snapshots: number;
  readonly policy: string;
  /** planRetention: every decision, totals, runs (snapshots and operations not yet materialized). */
  readonly planMs: number;
  /** Reading plan.operations the first time (what applyRetention does). */
  readonly operationsMs: number;
  /** Reading plan.snapshots the first time (what a dry-run table does). */
  readonly snapshotsMs: number;
  readonly operations: number;
  /** Heap the plan retains after a full GC, decisions only / with operations and snapshot rows. */
  readonly retainedMb: number;
  readonly retainedFullMb: number;
  readonly peakRssMb: number;
}

/** In the child: plan `runs` × 100 snapshots a few times, report the median times and memory. */
async function child(runs: number, policyName: string, rounds: number): Promise<ChildResult> {
  const policy = policyName === 'calendar' ? calendarPolicy : snapshotLifecycleRetention;
  // Warm the JIT on a small inventory first, as a long-lived process would be.
  const warm = syntheticInventory(100);
  for (let i = 0; i < 30; i++) void planRetention(warm, policy, NOW).operations;
  const inventory = syntheticInventory(runs);
  const gc = (globalThis as { gc?: () => void }).gc ?? ((): void => undefined);
  // Typed arrays keep their bytes outside the JS heap: count both.
  const used = (): number => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const plans: number[] = [];
  const ops: number[] = [];
  const rows: number[] = [];
  let retained = 0;
  let retainedFull = 0;
  let operations = 0;
  for (let i = 0; i < rounds; i++) {
    gc();
    const base = used();
    let plan: ReturnType<typeof planRetention> | undefined;
    plans.push(await timeMs(() => (plan = planRetention(inventory, policy, NOW))));
    gc();
    retained = used() - base;
    ops.push(await timeMs(() => (operations = plan!.operations.length)));
    rows.push(await timeMs(() => plan!.snapshots.length));
    gc();
    retainedFull = used() - base;
    plan = undefined;
  }
  return {
    snapshots: runs * PER_RUN,
    policy: policyName,
    planMs: median(plans),
    operationsMs: median(ops),
    snapshotsMs: median(rows),
    operations,
    retainedMb: retained / 1024 / 1024,
    retainedFullMb: retainedFull / 1024 / 1024,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  };
}

function runChild(runs: number, policy: string, rounds: number): ChildResult {
  const result = spawnSync(
    process.execPath,
    ['--expose-gc', '--max-old-space-size=4096', '--import', 'tsx', fileURLToPath(import.meta.url)],
    {
      env: { ...process.env, SAVEPOINT_RETENTION_BENCH_CHILD: JSON.stringify({ runs, policy, rounds }) },
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    },
  );
  if (result.status !== 0) throw new Error(`retention bench child failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').pop()!) as ChildResult;
}

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];

  // 10k: the real planner (decisions and operations) against the reference planner, interleaved in this process.
  const small = syntheticInventory(100);
  for (let i = 0; i < 30; i++) void planRetention(small, snapshotLifecycleRetention, NOW).operations; // JIT warm-up
  const { a, b } = await interleave(
    7,
    () => planRetention(small, snapshotLifecycleRetention, NOW).operations,
    () => referencePlan(small, snapshotLifecycleRetention, NOW),
  );
  const real = median(a);
  const ref = median(b);
  rows.push({
    area: 'retention',
    name: 'plan 10k snapshots (100 runs × 100) + operations, snapshotLifecycle',
    savepoint: `${fmt(real)} ms`,
    baseline: `${fmt(ref)} ms (reference planner)`,
    ratio: `${fmt(ref / real)}× faster`,
    target: '—',
    met: true,
  });

  const r100k = runChild(1000, 'lifecycle', 5);
  const r1m = runChild(10_000, 'lifecycle', 3);
  rows.push({
    area: 'retention',
    name: 'plan 100k snapshots (1,000 runs × 100), snapshotLifecycle',
    savepoint: `${fmt(r100k.planMs)} ms (+ ${fmt(r100k.operationsMs)} ms operations)`,
    baseline: '—',
    ratio: `${fmt((r100k.planMs + r100k.operationsMs) / real)}× the 10k time`,
    target: '—',
    met: true,
  });
  rows.push({
    area: 'retention',
    name: 'plan 1M snapshots (10,000 runs × 100), snapshotLifecycle: decisions',
    savepoint: `${fmt(r1m.planMs)} ms`,
    baseline: '—',
    ratio: `${fmt(r1m.planMs / r100k.planMs)}× the 100k time`,
    target: '< 1 s',
    met: r1m.planMs < 1000,
  });
  rows.push({
    area: 'retention',
    name: `plan 1M: + materialize ${fmt(r1m.operations)} operations / 1M snapshot rows`,
    savepoint: `${fmt(r1m.operationsMs)} ms / ${fmt(r1m.snapshotsMs)} ms`,
    baseline: '—',
    ratio: `${fmt((r1m.planMs + r1m.operationsMs) / 1000)} s plan + operations`,
    target: '—',
    met: true,
  });
  rows.push({
    area: 'retention',
    name: 'plan 1M: heap retained (decisions / + operations and rows) / peak RSS',
    savepoint: `${fmt(r1m.retainedMb)} MB / ${fmt(r1m.retainedFullMb)} MB / ${fmt(r1m.peakRssMb)} MB`,
    baseline: '—',
    ratio: `${fmt((r1m.retainedMb * 1024 * 1024) / r1m.snapshots)} B per snapshot (decisions)`,
    target: '—',
    met: true,
  });
  const cal = runChild(10_000, 'calendar', 3);
  rows.push({
    area: 'retention',
    name: 'plan 1M, hourly 24 + daily 7 + weekly 4 in Europe/Berlin: decisions',
    savepoint: `${fmt(cal.planMs)} ms`,
    baseline: '—',
    ratio: `${fmt(cal.planMs / r1m.planMs)}× the lifecycle policy`,
    target: '< 1 s',
    met: cal.planMs < 1000,
  });
  return rows;
}

const childSpec = process.env.SAVEPOINT_RETENTION_BENCH_CHILD;
if (childSpec) {
  const { runs, policy, rounds } = JSON.parse(childSpec) as { runs: number; policy: string; rounds: number };
  const result = await child(runs, policy, rounds);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
