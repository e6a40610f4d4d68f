import fc from 'fast-check';
import type { InventoryBatch, InventoryRun, InventorySnapshot, RetentionInventory, RunIndexEntry } from 'savepoint/toolkit';
import type { RetentionPolicy, RetentionRule } from 'savepoint';

export const NOW = Date.UTC(2024, 10, 3, 12); // 2024-11-03: a DST change in America/New_York
const HALF_HOUR = 1_800_000;
export const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham'] as const;
const STATUSES = ['in_progress', 'failed', 'completed', 'paused'] as const;

interface SnapSeed {
  slot: number; // half hours before NOW (negative: in the future)
  status: (typeof STATUSES)[number];
  files: 'plain' | 'gz' | 'both' | 'none';
  batch: number; // -1: none, else batch number
  part: boolean;
  idTag: string;
}

const snapSeed: fc.Arbitrary<SnapSeed> = fc.record({
  // Coarse slots make ties in time likely; the range crosses months, DST changes and 40+ days.
  slot: fc.oneof(fc.integer({ min: -2, max: 48 * 45 }), fc.integer({ min: 0, max: 12 })),
  status: fc.constantFrom(...STATUSES),
  files: fc.constantFrom('plain', 'plain', 'plain', 'gz', 'both', 'none'),
  batch: fc.constantFrom(-1, -1, -1, -1, 0, 1),
  part: fc.boolean(),
  idTag: fc.constantFrom('a', 'b', 'c'),
});

interface RunSeed {
  snaps: SnapSeed[];
  latest: 'newest' | 'none' | 'unreadable' | 'only' | 'older';
  sequenceOrder: 'time' | 'shuffled';
  shuffleSeed: number;
  index: 'none' | 'readable' | 'unreadable';
  dangling: boolean;
  unreadableFile: boolean;
  unreadableMember: boolean;
  orphanPart: number; // -1 none
  summary: boolean;
}

const runSeed: fc.Arbitrary<RunSeed> = fc.record({
  snaps: fc.array(snapSeed, { maxLength: 12 }),
  latest: fc.constantFrom('newest', 'newest', 'newest', 'none', 'unreadable', 'only', 'older'),
  sequenceOrder: fc.constantFrom('time', 'time', 'shuffled'),
  shuffleSeed: fc.nat(),
  index: fc.constantFrom('none', 'readable', 'readable', 'unreadable'),
  dangling: fc.boolean(),
  unreadableFile: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
  unreadableMember: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
  orphanPart: fc.constantFrom(-1, -1, 1, 5, 50),
  summary: fc.boolean(),
});

function permute<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let x = seed | 1;
  for (let i = out.length - 1; i > 0; i--) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function buildRun(runId: string, seed: RunSeed): InventoryRun {
  const dir = `checkpoints/${runId}`;
  const times = seed.snaps.map((s) => NOW - s.slot * HALF_HOUR);
  const order = seed.snaps.map((_, i) => i).sort((a, b) => times[a]! - times[b]! || a - b);
  const seqOf = new Map<number, number>();
  const seqs =
    seed.sequenceOrder === 'time'
      ? order.map((_, k) => k + 1)
      : permute(
          order.map((_, k) => k + 1),
          seed.shuffleSeed,
        );
  order.forEach((i, k) => seqOf.set(i, seqs[k]!));
  const batchKeys = [`${dir}/batch_1_2.json`, `${dir}/batch_3_4.json`];
  const snapshots: InventorySnapshot[] = seed.snaps.map((s, i) => {
    const sequence = seqOf.get(i)!;
    const id = `${s.idTag}${String(sequence).padStart(3, '0')}`;
    const key = `${dir}/history/${id}.json`;
    const files =
      s.files === 'plain'
        ? [{ key, version: '1', size: 100, compressed: false }]
        : s.files === 'gz'
          ? [{ key: `${key}.gz`, version: '1', size: 40, compressed: true }]
          : s.files === 'both'
            ? [
                { key, version: '1', size: 100, compressed: false },
                { key: `${key}.gz`, version: '1', size: 40, compressed: true },
              ]
            : [];
    const batches = s.batch >= 0 || s.files === 'none' ? [batchKeys[Math.max(0, s.batch)]!] : [];
    return {
      runId,
      id,
      sequence,
      createdAt: new Date(times[i]!).toISOString(),
      createdAtMs: times[i]!,
      status: s.status,
      files,
      batches,
      parts: s.part ? [{ key: `${dir}/parts/${sequence}/1.json`, version: '1', size: 10 }] : [],
      latest: false,
      origin: 'index' as const,
    };
  });
  // latest.json: holds the highest sequence, nothing, an unreadable document, a snapshot no history entry holds, or an older one.
  let latest: InventoryRun['latest'];
  const bySeq = [...snapshots].sort((a, b) => b.sequence - a.sequence);
  if (seed.latest === 'newest' && bySeq[0]) {
    snapshots[snapshots.indexOf(bySeq[0])] = { ...bySeq[0], latest: true };
    latest = { key: `${dir}/latest.json`, version: '7', size: 100, readable: true, snapshotId: bySeq[0].id };
  } else if (seed.latest === 'older' && bySeq[1]) {
    snapshots[snapshots.indexOf(bySeq[1])] = { ...bySeq[1], latest: true };
    latest = { key: `${dir}/latest.json`, version: '7', size: 100, readable: true, snapshotId: bySeq[1].id };
  } else if (seed.latest === 'unreadable') {
    latest = { key: `${dir}/latest.json`, version: '7', size: 100, readable: false };
  } else if (seed.latest === 'only') {
    const sequence = (bySeq[0]?.sequence ?? 0) + 1;
    const at = NOW - 60_000;
    snapshots.push({
      runId,
      id: `z${String(sequence).padStart(3, '0')}`,
      sequence,
      createdAt: new Date(at).toISOString(),
      createdAtMs: at,
      status: 'in_progress',
      files: [],
      batches: [],
      parts: [],
      latest: true,
      origin: 'document',
    });
    latest = { key: `${dir}/latest.json`, version: '7', size: 100, readable: true, snapshotId: `z${String(sequence).padStart(3, '0')}` };
  }
  snapshots.sort((a, b) => a.sequence - b.sequence || a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const usedBatches = batchKeys.filter((k) => snapshots.some((s) => s.batches.includes(k)));
  const batches: InventoryBatch[] = usedBatches.map((key, i) => ({
    key,
    version: '1',
    size: 300,
    memberIds: snapshots.filter((s) => s.batches.includes(key)).map((s) => s.id),
    unreadableMembers: seed.unreadableMember && i === 0 ? 1 : 0,
  }));
  const entries: RunIndexEntry[] = snapshots
    .filter((s) => s.files.length > 0 || s.batches.length > 0)
    .map((s) => ({
      sequence: s.sequence,
      checkpoint_id: s.id,
      trigger: 'manual',
      timestamp: s.createdAt,
      file_path: s.files[0]?.key.replace(/\.gz$/, '') ?? s.batches[0]!,
      status: s.status,
    }));
  if (seed.dangling)
    entries.push({
      sequence: 1,
      checkpoint_id: 'gone001',
      trigger: 'manual',
      timestamp: new Date(NOW).toISOString(),
      file_path: `${dir}/history/gone001.json`,
      status: 'in_progress',
    });
  return {
    runId,
    snapshots,
    summaryKey: `${dir}/summary.json`,
    ...(latest ? { latest } : {}),
    ...(seed.index !== 'none'
      ? {
          index: {
            key: `${dir}/index.json`,
            version: '3',
            size: 200,
            readable: seed.index === 'readable',
            entries: seed.index === 'readable' ? entries : [],
          },
        }
      : {}),
    ...(seed.summary
      ? { summary: { key: `${dir}/summary.json`, version: '1', size: 50, lastCheckpointAtMs: NOW - 50 * 24 * 3_600_000 } }
      : {}),
    batches,
    orphanParts:
      seed.orphanPart >= 0 && !snapshots.some((s) => s.sequence === seed.orphanPart)
        ? [{ key: `${dir}/parts/${seed.orphanPart}/1.json`, version: '1', size: 10, sequence: seed.orphanPart }]
        : [],
    unreadable: seed.unreadableFile
      ? [
          {
            key: `${dir}/history/broken.json`,
            version: '1',
            size: 5,
            kind: 'history' as const,
            reasonCode: 'checkpoint_schema_invalid' as const,
          },
        ]
      : [],
  } satisfies InventoryRun;
}

/** Random inventories: up to 6 runs of up to 12 snapshots with every kind of file and flaw. */
export const inventoryArb: fc.Arbitrary<RetentionInventory> = fc
  .record({
    runs: fc.array(runSeed, { minLength: 1, maxLength: 6 }),
    preserved: fc.array(fc.nat({ max: 7 }), { maxLength: 2 }),
    preservedReadable: fc.constantFrom(true, true, true, true, false),
    compressHistory: fc.constantFrom(true, true, false),
  })
  .map(({ runs, preserved, preservedReadable, compressHistory }) => ({
    profile: { name: 'default', compressHistory },
    runs: runs.map((seed, i) => buildRun(`run-${i}`, seed)),
    preservedRuns: preserved.map((i) => `run-${i}`),
    preservedRunsReadable: preservedReadable,
    problems: [],
  }));

const durationArb = fc.oneof(
  fc.integer({ min: 0, max: 50 * 24 }).map((h) => h * 3_600_000),
  fc.integer({ min: 0, max: 50 }).map((d) => `${d}d`),
  fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 23 })).map(([d, h]) => `${d}d${h}h`),
);

export const ruleArb: fc.Arbitrary<RetentionRule> = fc.oneof(
  fc
    .record({ rule: fc.constant('keep-last' as const), count: fc.nat({ max: 8 }) }, { requiredKeys: ['rule', 'count'] })
    .chain((r) => fc.option(durationArb, { nil: undefined }).map((maxAge) => (maxAge === undefined ? r : { ...r, maxAge }))),
  durationArb.map((duration) => ({ rule: 'keep-within' as const, duration })),
  fc.constantFrom(...STATUSES).map((status) => ({ rule: 'keep-latest-status' as const, status })),
  fc
    .record({
      unit: fc.constantFrom('hour', 'day', 'week', 'month', 'year') as fc.Arbitrary<'hour' | 'day' | 'week' | 'month' | 'year'>,
      count: fc.nat({ max: 6 }),
      timeZone: fc.constantFrom(...ZONES),
      maxAge: fc.option(durationArb, { nil: undefined }),
    })
    .map(({ maxAge, ...r }) => ({ rule: 'keep-calendar' as const, ...r, ...(maxAge === undefined ? {} : { maxAge }) })),
  fc.array(fc.nat({ max: 6 }), { maxLength: 2 }).map((ids) => ({ rule: 'preserve-runs' as const, runIds: ids.map((i) => `run-${i}`) })),
  fc
    .record(
      {
        keepAll: fc.nat({ max: 3 }),
        keepFinal: fc.nat({ max: 3 }),
        finalKeeps: fc.constantFrom('latest' as const, 'checkpoint' as const),
        archiveKeeps: fc.constantFrom('summary' as const, 'final' as const),
      },
      { requiredKeys: ['keepAll', 'keepFinal'] },
    )
    // finalKeeps 'latest' goes with archiveKeeps 'summary' only (the policy refuses the rest).
    .filter((t) => t.finalKeeps !== 'latest' || t.archiveKeeps === 'summary')
    .map((t) => ({ rule: 'run-tiers' as const, ...t })),
);

/** Random policies: up to 4 rules (at most one run-tiers), optional compression. Rules get distinct names so reasons can be traced to them. */
export const policyArb: fc.Arbitrary<RetentionPolicy> = fc
  .record({
    rules: fc.array(ruleArb, { maxLength: 4 }),
    compressAfter: fc.option(durationArb, { nil: undefined }),
  })
  .map(({ rules, compressAfter }) => {
    let tiersSeen = false;
    const kept = rules.filter((r) => (r.rule === 'run-tiers' ? !tiersSeen && (tiersSeen = true) : true));
    return {
      name: 'random',
      rules: kept.map((r, i) => (r.rule === 'run-tiers' ? r : { ...r, name: `${r.rule}#${i}` })),
      ...(compressAfter === undefined ? {} : { compressAfter }),
    };
  });

export const optionsArb = fc.record({ allowRunDeletion: fc.boolean(), deleteUnreadable: fc.boolean() });
