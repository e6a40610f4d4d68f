/**
 * `npm run bench -- resume`: the ResumePlanner's costs.
 *
 * - Happy path (valid `latest`): storage reads and time do not depend on history size —
 *   10, 1,000 and 10,000 snapshots, counted with a wrapping adapter; time compared with the
 *   10-snapshot store in the same run (interleaved medians).
 * - Fallback (corrupt `latest`) with 10,000 history entries on fsStorage: time, target < 200 ms.
 *   Also the worst case where the index is damaged too on an id-named layout, which must
 *   open every file (reported, no target).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defaultProfile, memoryStorage, planResume, type Profile, type StorageAdapter, type StorageEntry } from 'savepoint';
import { encodeRunIndex, toRfc3339, type RunIndexEntry } from 'savepoint/toolkit';
import { phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { fsStorage } from 'savepoint/fs';
import { fmt, interleave, median, timeMs, type BenchRow } from './harness.js';

const AREA = 'resume';
const T0 = Date.parse('2026-01-15T00:00:00.000Z');

interface Counting extends StorageAdapter {
  gets: number;
  lists: number;
  reset(): void;
}

/** Counts the calls planResume makes (the "number of storage reads"). */
function counting(inner: StorageAdapter): Counting {
  const c: Counting = {
    name: `counting(${inner.name})`,
    capabilities: inner.capabilities,
    gets: 0,
    lists: 0,
    reset() {
      c.gets = 0;
      c.lists = 0;
    },
    get: (key) => {
      c.gets++;
      return inner.get(key);
    },
    put: (key, bytes, options) => inner.put(key, bytes, options),
    delete: (key, options) => inner.delete(key, options),
    list(prefix): AsyncIterable<StorageEntry> {
      c.lists++;
      return inner.list(prefix);
    },
    close: () => inner.close(),
  };
  return c;
}

function phasedPayload(n: number): PhasedWorkflowPayload {
  const keys = ['phase_0', 'phase_0_5', 'phase_1', 'phase_2', 'phase_3', 'phase_4', 'phase_5', 'phase_6', 'phase_7', 'phase_8'] as const;
  return {
    phase: 'phase_3_build',
    state_snapshot: {
      phase_outputs: Object.fromEntries(
        keys.map((k, i) => [k, i < 4 ? { result: `output ${i}` } : null]),
      ) as PhasedWorkflowPayload['state_snapshot']['phase_outputs'],
      current_phase_state: { phase: 'phase_3_build', started_at: toRfc3339(T0), progress: { step: n }, partial_output: null },
      gate_history: [],
      circuit_breaker_state: { github_api: 'closed' },
      cost_accumulated: n / 100,
      health_history: [],
      errors_encountered: [],
      active_lessons: ['L-1'],
    },
    context_fields: { api_metrics: {}, fallback_flags: {}, iteration_counts: {}, warnings: [] },
  };
}

interface Case<P> {
  readonly label: string;
  readonly profile: Profile<P>;
  readonly runId: string;
  readonly source: string;
  readonly payload: (n: number) => P;
}

const cases = [
  {
    label: 'default profile (history by snapshot id)',
    profile: defaultProfile,
    runId: 'bench-run',
    source: 'step_boundary',
    payload: (n: number) => ({ step: n, note: `state ${n}` }),
  },
  {
    label: 'phasedWorkflow (cp_NNN_trigger, probe)',
    profile: phasedWorkflow,
    runId: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    source: 'expensive_op',
    payload: phasedPayload,
  },
] as const;

interface Encoded {
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly entry: RunIndexEntry;
}

/** Encodes snapshots 1..count of a run once; {@link filesOf} lays out any prefix of them. */
async function encodeRun<P>(c: Case<P>, count: number): Promise<Encoded[]> {
  const out: Encoded[] = [];
  for (let n = 1; n <= count; n++) {
    const createdAtMs = T0 + n * 1000;
    const id = c.profile.newSnapshotId({ runId: c.runId, sequence: n, source: c.source, createdAtMs });
    const { bytes, snapshot } = await c.profile.document.encode({
      id,
      runId: c.runId,
      sequence: n,
      createdAt: toRfc3339(createdAtMs),
      source: c.source,
      sourceDetails: [],
      status: 'in_progress',
      payload: c.payload(n),
    });
    const key = c.profile.layout.historyKey!({ runId: c.runId, id, sequence: n, source: c.source });
    out.push({
      key,
      bytes,
      entry: {
        sequence: n,
        checkpoint_id: snapshot.id,
        trigger: c.source,
        timestamp: snapshot.createdAt,
        file_path: key,
        status: 'in_progress',
      },
    });
  }
  return out;
}

/** The files of a run holding the first `size` snapshots, as the writer lays them out: history entries, latest, index. */
function filesOf<P>(c: Case<P>, encoded: readonly Encoded[], size: number): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  const first = encoded.slice(0, size);
  for (const e of first) files.set(e.key, e.bytes);
  files.set(c.profile.layout.latestKey(c.runId), first[first.length - 1]!.bytes);
  files.set(
    c.profile.layout.indexKey!(c.runId),
    encodeRunIndex({
      run_id: c.runId,
      checkpoint_count: first.length,
      checkpoints: first.map((e) => e.entry),
      last_updated: toRfc3339(T0 + size * 1000),
    }),
  );
  return files;
}

async function memoryStore(files: Map<string, Uint8Array>): Promise<StorageAdapter> {
  const storage = memoryStorage();
  for (const [k, v] of files) await storage.put(k, v);
  return storage;
}

/** Writes files straight to disk (no fsync: this is setup, not the thing measured). */
async function fsStore(dir: string, files: Map<string, Uint8Array>): Promise<void> {
  const list = [...files];
  for (let i = 0; i < list.length; i += 256) {
    await Promise.all(
      list.slice(i, i + 256).map(async ([k, v]) => {
        const path = join(dir, k);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, v);
      }),
    );
  }
}

const corruptLatest = (bytes: Uint8Array): Uint8Array => {
  const out = bytes.slice();
  const i = out.length >> 1;
  out[i] = out[i]! ^ 0x04;
  return out;
};

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const sizes = [10, 1_000, 10_000];
  const encodedRuns = new Map<string, Encoded[]>();

  for (const c of cases as readonly Case<unknown>[]) {
    const stores = new Map<number, Counting>();
    const encoded = await encodeRun(c, sizes[sizes.length - 1]!);
    encodedRuns.set(c.label, encoded);
    // Each store holds the first `size` snapshots of the same run: same documents, more history.
    for (const size of sizes) stores.set(size, counting(await memoryStore(filesOf(c, encoded, size))));
    const plan = (s: StorageAdapter) => planResume({ storage: s, profile: c.profile, runId: c.runId });
    const base = stores.get(10)!;
    base.reset();
    await plan(base);
    const baseReads = `${base.gets} get / ${base.lists} list`;
    for (const size of sizes) {
      const s = stores.get(size)!;
      s.reset();
      const p = await plan(s);
      const reads = `${s.gets} get / ${s.lists} list`;
      if (p.snapshot.sequence !== size) throw new Error(`bench: resumed ${p.snapshot.sequence}, expected ${size}`);
      const { a, b } = await interleave(
        300,
        () => plan(s),
        () => plan(base),
      );
      const ratio = median(a) / median(b);
      rows.push({
        area: AREA,
        name: `happy path, ${c.label}, ${size.toLocaleString('en-US')} snapshots (memory)`,
        savepoint: `${fmt(median(a) * 1000)} µs, ${reads}`,
        baseline: `${fmt(median(b) * 1000)} µs, ${baseReads} (10 snapshots)`,
        ratio: `${fmt(ratio)}×`,
        target: 'same reads, ≤ 1.5× time',
        met: reads === baseReads && ratio <= 1.5,
      });
    }
  }

  // Fallback on fsStorage: corrupt latest, 10,000 history entries.
  for (const c of cases as readonly Case<unknown>[]) {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-resume-bench-'));
    try {
      const files = filesOf(c, encodedRuns.get(c.label)!, 10_000);
      const latestKey = c.profile.layout.latestKey(c.runId);
      files.set(latestKey, corruptLatest(files.get(latestKey)!));
      await fsStore(dir, files);
      const storage = counting(fsStorage({ dir, layout: 'files' }));
      const run = async (): Promise<void> => {
        const p = await planResume({ storage, profile: c.profile, runId: c.runId });
        if (p.snapshot.sequence !== 10_000) throw new Error('bench: wrong snapshot');
      };
      await run(); // warm: open the store, compile validators
      storage.reset();
      await run();
      const reads = `${storage.gets} get / ${storage.lists} list`;
      const samples: number[] = [];
      for (let i = 0; i < 15; i++) samples.push(await timeMs(run));
      const ms = median(samples);
      rows.push({
        area: AREA,
        name: `fallback, corrupt latest, 10,000 history, ${c.label} (fs)`,
        savepoint: `${fmt(ms)} ms, ${reads}`,
        baseline: '—',
        ratio: '—',
        target: '< 200 ms',
        met: ms < 200,
      });

      if (c.profile === defaultProfile) {
        // Worst case: the index is damaged too and history names carry no sequence: every file is opened.
        const indexKey = c.profile.layout.indexKey!(c.runId);
        await writeFile(join(dir, indexKey), corruptLatest(files.get(indexKey)!).slice(0, 100));
        storage.reset();
        const worst = await timeMs(run);
        const worstReads = `${storage.gets} get / ${storage.lists} list`;
        const again = await timeMs(run);
        rows.push({
          area: AREA,
          name: `worst case, corrupt latest + index, 10,000 history, ${c.label} (fs)`,
          savepoint: `${fmt(Math.min(worst, again))} ms, ${worstReads}`,
          baseline: '—',
          ratio: '—',
          target: '— (reads every file, reported)',
          met: true,
        });
      }
      await storage.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}
