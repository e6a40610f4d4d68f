/**
 * Writer bench:
 * 1. durable writes/s of a 4 KB payload through the writer on fsStorage vs raw node:fs
 *    doing the same file operations (history entry create-only + latest replace, each
 *    temp → fsync → link/rename → fsync dir); ratio of medians, target ≥ 0.9;
 * 2. 8 concurrent runs with group commit vs the same 8 without (`groupCommit: false`), on
 *    a store that costs 5 ms per write call (a networked or fsync-bound store), with and
 *    without an atomic batch(); each run's agent issues its 30 checkpoints without awaiting
 *    each; target ≥ 2×;
 * 3. a burst of 1,000 identical triggers inside the coalescing window → exactly 1 write.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriter, defaultProfile, defineProfile, memoryStorage, standardLayout, type JsonValue, type StorageAdapter } from 'savepoint';
import { historyBySnapshotId } from 'savepoint/toolkit';
import { fsStorage } from 'savepoint/fs';
import { fmt, interleave, median, timeMs, type BenchRow } from './harness.js';

/** defaultProfile without an index: the writer does exactly history + latest, like the baseline. */
const noIndexProfile = defineProfile<JsonValue>({
  name: 'benchNoIndex',
  payload: defaultProfile.payload,
  triggers: defaultProfile.triggers,
  statuses: defaultProfile.statuses,
  document: defaultProfile.document,
  heartbeat: false,
  layout: standardLayout({ root: 'checkpoints', history: historyBySnapshotId(), indexName: false }),
});

const payload4k = (i: number): JsonValue => ({ step: i, note: 'x'.repeat(4000) });

/** One durable file write the way a careful hand-rolled implementation does it, with the same calls fsStorage makes. */
async function durableWrite(dir: string, name: string, data: Uint8Array, createOnly: boolean): Promise<void> {
  const tmp = join(dir, `.${name}.${process.pid}.tmp`);
  const fh = await fsp.open(tmp, 'wx');
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  if (createOnly) {
    await fsp.link(tmp, join(dir, name)); // fails if the entry exists: create-only
    await fsp.unlink(tmp);
  } else await fsp.rename(tmp, join(dir, name));
  const dh = await fsp.open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

let adapterRow: BenchRow | undefined;

/**
 * Interleaves single checkpoints of the three contenders (writer on fsStorage, raw node:fs,
 * fsStorage puts alone), rotating their order, and times each one: fsync latency on a shared
 * disk drifts within seconds, so finer interleaving than whole rounds keeps the comparison fair.
 */
async function fsRatio(samples: number): Promise<BenchRow> {
  const base = mkdtempSync(join(tmpdir(), 'savepoint-bench-writer-'));
  try {
    const spStorage = fsStorage({ dir: join(base, 'sp'), layout: 'files' });
    const writer = createWriter({ storage: spStorage, profile: noIndexProfile, runId: 'bench', lock: false });
    const adStorage = fsStorage({ dir: join(base, 'fs'), layout: 'files' });
    const rawDir = join(base, 'raw', 'checkpoints', 'bench');
    mkdirSync(join(rawDir, 'history'), { recursive: true });
    const doc = (i: number): Uint8Array =>
      new TextEncoder().encode(JSON.stringify({ snapshot_id: `cp_${i}`, sequence: i + 1, state: payload4k(i) }));
    const contenders: (() => (i: number) => Promise<void>)[] = [
      () => async (i) => {
        const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload4k(i) });
        if (!r.ok) throw r.error;
      },
      // The same document work the writer does (JSON), then the same file operations.
      () => async (i) => {
        const d = doc(i);
        await durableWrite(join(rawDir, 'history'), `cp_${i}.json`, d, true);
        await durableWrite(rawDir, 'latest.json', d, false);
      },
      // The adapter alone, doing the writer's two puts: separates the writer's own cost from fsStorage's.
      () => async (i) => {
        const d = doc(i);
        await adStorage.put(`checkpoints/bench/history/cp_${i}.json`, d, { ifAbsent: true });
        await adStorage.put('checkpoints/bench/latest.json', d);
      },
    ];
    const fns = contenders.map((c) => c());
    const times: number[][] = [[], [], []];
    for (let i = 0; i < samples + 5; i++) {
      for (let k = 0; k < 3; k++) {
        const which = (i + k) % 3;
        const t = await timeMs(() => fns[which]!(i));
        if (i >= 5) times[which]!.push(t); // the first few warm up caches and JIT
      }
    }
    await writer.close();
    await spStorage.close();
    await adStorage.close();
    const [sp, bl, ad] = times.map((t) => 1000 / median(t)) as [number, number, number];
    adapterRow = {
      area: 'writer',
      name: 'writer overhead: checkpoints/s through the writer vs fsStorage puts alone (same two files)',
      savepoint: `${fmt(sp)} ops/s`,
      baseline: `${fmt(ad)} ops/s (fsStorage.put ×2)`,
      ratio: `${(sp / ad).toFixed(2)}×`,
      target: '— (diagnostic)',
      met: true,
    };
    return {
      area: 'writer',
      name: 'durable checkpoints/s, 4 KB payload, fsStorage (history + latest, fsync)',
      savepoint: `${fmt(sp)} ops/s`,
      baseline: `${fmt(bl)} ops/s (raw node:fs)`,
      ratio: `${(sp / bl).toFixed(2)}×`,
      target: '≥ 0.9×',
      met: sp / bl >= 0.9,
    };
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/**
 * memoryStorage whose every write call (put, or one batch) takes `ms`: a networked or
 * fsync-bound store. `atomic` keeps batch() (a transactional store, or GitHub's one-commit
 * git-data writes); without it the writer does one put per file, as on fs.
 */
function slowStore(ms: number, atomic: boolean): StorageAdapter {
  const inner = memoryStorage();
  const wait = (): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const store: StorageAdapter = {
    name: 'slow-memory',
    capabilities: { atomicBatch: atomic, crossProcessConditional: false },
    get: (k) => inner.get(k),
    put: async (k, b, o) => {
      await wait();
      return inner.put(k, b, o);
    },
    delete: (k, o) => inner.delete(k, o),
    list: (p) => inner.list(p),
    close: () => inner.close(),
  };
  if (atomic) {
    store.batch = async (ops) => {
      await wait();
      return inner.batch!(ops);
    };
  }
  return store;
}

async function groupCommitRatio(rounds: number, atomic: boolean): Promise<BenchRow> {
  const runs = 8;
  const perRun = 30;
  const latencyMs = 5;
  const workload = (groupCommit: boolean) => async (): Promise<void> => {
    const storage = slowStore(latencyMs, atomic);
    await Promise.all(
      Array.from({ length: runs }, async (_, r) => {
        const w = createWriter({ storage, profile: defaultProfile, runId: `run-${r}`, groupCommit, heartbeatIntervalMs: false });
        // Agents that do not wait for each checkpoint before their next step: every step's
        // checkpoint is issued at once and awaited at the end (each with a distinct state).
        const rs = await Promise.all(
          Array.from({ length: perRun }, (_, i) => w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } })),
        );
        for (const x of rs) if (!x.ok) throw x.error;
        await w.close();
      }),
    );
  };
  const t = await interleave(rounds, workload(true), workload(false));
  const total = runs * perRun;
  const withGc = (total * 1000) / median(t.a);
  const without = (total * 1000) / median(t.b);
  return {
    area: 'writer',
    name: `8 concurrent runs × 30 un-awaited checkpoints, store with ${latencyMs} ms per write call, ${atomic ? 'atomic batch()' : 'no batch (one put per file, like fs)'}: group commit vs one-by-one`,
    savepoint: `${fmt(withGc)} checkpoints/s`,
    baseline: `${fmt(without)} checkpoints/s (groupCommit: false)`,
    ratio: `${(withGc / without).toFixed(2)}×`,
    target: '≥ 2×',
    met: withGc / without >= 2,
  };
}

async function burst(): Promise<BenchRow> {
  const inner = memoryStorage();
  let writes = 0;
  const storage: StorageAdapter = {
    ...inner,
    put: (k, b, o) => (writes++, inner.put(k, b, o)),
    batch: (ops) => (writes++, inner.batch!(ops)),
  };
  const w = createWriter({ storage, profile: defaultProfile, runId: 'burst', heartbeatIntervalMs: false });
  const rs = await Promise.all(
    Array.from({ length: 1000 }, (_, i) =>
      w.checkpoint({ source: i % 2 ? 'manual' : 'step_boundary', status: 'in_progress', payload: { same: 'state' } }),
    ),
  );
  const written = rs.filter((r) => r.ok && r.outcome === 'written').length;
  const coalesced = rs.filter((r) => r.ok && r.outcome === 'coalesced').length;
  await w.close();
  return {
    area: 'writer',
    name: 'burst of 1,000 identical triggers inside the 3 s window',
    savepoint: `${writes} write (${written} snapshot, ${coalesced} coalesced)`,
    baseline: '—',
    ratio: '—',
    target: 'exactly 1 write',
    met: writes === 1 && written === 1 && coalesced === 999,
  };
}

export async function bench(): Promise<BenchRow[]> {
  const fs = await fsRatio(240);
  return [fs, ...(adapterRow ? [adapterRow] : []), await groupCommitRatio(5, false), await groupCommitRatio(5, true), await burst()];
}
