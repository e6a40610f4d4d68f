/**
 * Retention bench: planRetention over synthetic inventories of 10k, 100k and 1M snapshots
 * (runs of 100 snapshots, four hours apart, with an index entry each), with the
 * snapshot-lifecycle default policy and with a calendar policy in a DST time zone.
 *
 * Baseline: the slow reference planner of the property tests (tests/retention/reference.ts)
 * at 10k snapshots, interleaved with the real planner in the same process; at larger
 * sizes the reference is too slow to run and the growth from 10k → 100k → 1M is shown
 * instead. Memory is measured in a child process started with --expose-gc: the heap the
 * plan retains after a full GC, and the process's peak RSS (which includes the inventory).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { keepDaily, keepHourly, keepWeekly, planRetention, snapshotLifecycleRetention, type InventoryRun, type InventorySnapshot, type RetentionInventory, type RetentionPolicy } from 'savepoint';
import { referencePlan } from '../tests/retention/reference.js';
import { fmt, interleave, median, timeMs, type BenchRow } from './harness.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2025, 2, 31, 12); // the week of Europe's DST change
const PER_RUN = 100;

const calendarPolicy: RetentionPolicy = {
  name: 'calendar',
  rules: [keepHourly(24, { timeZone: 'Europe/Berlin' }), keepDaily(7, { timeZone: 'Europe/Berlin' }), keepWeekly(4, { timeZone: 'Europe/Berlin' })],
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
  readonly medianMs: number;
  readonly retainedMb: number;
  readonly peakRssMb: number;
  readonly deletes: number;
}

/** In the child: plan `runs` × 100 snapshots a few times, report the median time and memory. */
async function child(runs: number, policyName: string, rounds: number): Promise<ChildResult> {
  const policy = policyName === 'calendar' ? calendarPolicy : snapshotLifecycleRetention;
  const inventory = syntheticInventory(runs);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const base = process.memoryUsage().heapUsed;
  let plan = planRetention(inventory, policy, NOW);
  gc?.();
  const retained = process.memoryUsage().heapUsed - base;
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // Drop the previous plan first so each round plans with the same free heap.
    plan = undefined as unknown as typeof plan;
    gc?.();
    times.push(await timeMs(() => (plan = planRetention(inventory, policy, NOW))));
  }
  return {
    snapshots: runs * PER_RUN,
    policy: policyName,
    medianMs: median(times),
    retainedMb: retained / 1024 / 1024,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    deletes: plan.totals.delete,
  };
}

function runChild(runs: number, policy: string, rounds: number): ChildResult {
  const result = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=4096', '--import', 'tsx', fileURLToPath(import.meta.url)], {
    env: { ...process.env, SAVEPOINT_RETENTION_BENCH_CHILD: JSON.stringify({ runs, policy, rounds }) },
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (result.status !== 0) throw new Error(`retention bench child failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').pop()!) as ChildResult;
}

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];

  // 10k: the real planner against the reference planner, interleaved in this process.
  const small = syntheticInventory(100);
  const { a, b } = await interleave(
    5,
    () => planRetention(small, snapshotLifecycleRetention, NOW),
    () => referencePlan(small, snapshotLifecycleRetention, NOW),
  );
  const real = median(a);
  const ref = median(b);
  rows.push({
    area: 'retention',
    name: 'plan 10k snapshots (100 runs × 100), snapshotLifecycle policy',
    savepoint: `${fmt(real)} ms`,
    baseline: `${fmt(ref)} ms (reference planner)`,
    ratio: `${fmt(ref / real)}× faster`,
    target: '—',
    met: true,
  });

  const results: ChildResult[] = [];
  for (const [runs, rounds] of [
    [1000, 5],
    [10_000, 3],
  ] as const) {
    results.push(runChild(runs, 'lifecycle', rounds));
  }
  const r1m = results[1]!;
  rows.push({
    area: 'retention',
    name: 'plan 100k snapshots (1,000 runs × 100), snapshotLifecycle policy',
    savepoint: `${fmt(results[0]!.medianMs)} ms`,
    baseline: '—',
    ratio: `${fmt(results[0]!.medianMs / real)}× the 10k time`,
    target: '—',
    met: true,
  });
  rows.push({
    area: 'retention',
    name: 'plan 1M snapshots (10,000 runs × 100), snapshotLifecycle policy',
    savepoint: `${fmt(r1m.medianMs)} ms`,
    baseline: '—',
    ratio: `${fmt(r1m.medianMs / results[0]!.medianMs)}× the 100k time`,
    target: '< 1 s',
    met: r1m.medianMs < 1000,
  });
  rows.push({
    area: 'retention',
    name: 'plan 1M snapshots: heap retained by the plan / process peak RSS',
    savepoint: `${fmt(r1m.retainedMb)} MB / ${fmt(r1m.peakRssMb)} MB`,
    baseline: '—',
    ratio: `${fmt((r1m.retainedMb * 1024 * 1024) / r1m.snapshots)} B per snapshot`,
    target: '—',
    met: true,
  });
  const cal = runChild(10_000, 'calendar', 3);
  rows.push({
    area: 'retention',
    name: 'plan 1M snapshots, hourly 24 + daily 7 + weekly 4 in Europe/Berlin',
    savepoint: `${fmt(cal.medianMs)} ms`,
    baseline: '—',
    ratio: `${fmt(cal.medianMs / r1m.medianMs)}× the lifecycle policy`,
    target: '< 1 s',
    met: cal.medianMs < 1000,
  });
  return rows;
}

const childSpec = process.env.SAVEPOINT_RETENTION_BENCH_CHILD;
if (childSpec) {
  const { runs, policy, rounds } = JSON.parse(childSpec) as { runs: number; policy: string; rounds: number };
  const result = await child(runs, policy, rounds);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
