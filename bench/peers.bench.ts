/**
 * `npm run bench -- peers`: savepoint against LangGraph's own checkpointers, in
 * this process, interleaved, medians and ratios side by side.
 *
 * - memory, 1 KB state: `writer.checkpoint()` vs `MemorySaver.put()+putWrites()`, target ≤ 1.0×;
 * - memory, latest read: `planResume()` vs `MemorySaver.getTuple()`, target ≤ 1.0×;
 * - memory, 200 KB state: one checkpoint vs `put()+putWrites()`, target ≤ 1.5×;
 * - growth: median cost of checkpoints #9,801–10,000 of one run vs #1–200 of a fresh run in the
 *   same store, interleaved, on memoryStorage and fsStorage, target ≤ 1.2×;
 * - footprint: bytes stored after 500 checkpoints of a slowly changing 200 KB state, default
 *   settings, vs SqliteSaver's database file, target ≤ 1/10;
 * - encrypted: one checkpoint of a 1 KB and a 200 KB state through `encryptedStorage` over
 *   memoryStorage and fsStorage vs the same store unencrypted, target ≤ 1.2×.
 *
 * LangGraph's packages are devDependencies only. Set SAVEPOINT_BENCH_QUICK=1 for a short run
 * (growth over 2,000 checkpoints) while developing.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemorySaver, emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from './sqlite-peer.js';
import {
  createWriter,
  defaultProfile,
  encryptedStorage,
  EncryptionKey,
  memoryStorage,
  planResume,
  type JsonValue,
  type StorageAdapter,
} from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { initialPhasedPayload, phasedWorkflow } from 'savepoint/phased-workflow';
import { fmt, median, timeMs, type BenchRow } from './harness.js';

const AREA = 'peers';
const QUICK = process.env.SAVEPOINT_BENCH_QUICK === '1';

/** A state of about `kb` KB whose item `i % items` changes at step `i` (slowly changing). */
function stateOf(kb: number, step: number): JsonValue {
  const items = Math.max(1, Math.floor(kb));
  const list: JsonValue[] = [];
  for (let k = 0; k < items; k++)
    list.push({ id: k, text: `item ${k} `.padEnd(990, String.fromCharCode(97 + ((k * 7) % 26))), rev: k === step % items ? step : 0 });
  return { step, items: list };
}

/** One LangGraph super-step the way a graph saves it: put() the checkpoint, then putWrites() the node's writes. */
function langGraphStep(saver: MemorySaver | SqliteSaver, threadId: string) {
  let parent: string | undefined;
  return async (state: JsonValue, step: number): Promise<void> => {
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(step),
      channel_values: { state },
      channel_versions: { state: step + 1 },
    };
    const config = { configurable: { thread_id: threadId, checkpoint_ns: '', ...(parent ? { checkpoint_id: parent } : {}) } };
    const next = await saver.put(config, checkpoint, { source: 'loop', step, parents: {} }, {});
    await saver.putWrites(next, [['state', state]], `task-${step}`);
    parent = checkpoint.id;
  };
}

function savepointStep(storage: StorageAdapter, runId: string) {
  const writer = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false });
  return {
    writer,
    step: async (state: JsonValue): Promise<void> => {
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state });
      if (!r.ok) throw r.error;
    },
  };
}

/** A phasedWorkflow run (no per-run retention: its index lists every checkpoint) whose ~1 KB progress changes every step. */
function phasedStep(storage: StorageAdapter, runId: string) {
  const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false });
  const payload = initialPhasedPayload('phase_1_plan', '2026-01-15T14:00:00.000Z');
  return {
    writer,
    step: async (state: JsonValue): Promise<void> => {
      payload.state_snapshot.current_phase_state.progress = { state };
      const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
      if (!r.ok) throw r.error;
    },
  };
}

/** What the growth row needs of a run: one step, and close. */
type Stepper = (
  storage: StorageAdapter,
  runId: string,
) => { writer: { close(): Promise<void> }; step: (state: JsonValue) => Promise<void> };

/** Interleaves single operations of the two contenders, alternating which goes first. */
async function pairwise(
  rounds: number,
  a: (i: number) => Promise<unknown>,
  b: (i: number) => Promise<unknown>,
): Promise<{ a: number; b: number }> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      ta.push(await timeMs(() => a(i)));
      tb.push(await timeMs(() => b(i)));
    } else {
      tb.push(await timeMs(() => b(i)));
      ta.push(await timeMs(() => a(i)));
    }
  }
  return { a: median(ta), b: median(tb) };
}

function ratioRow(name: string, sp: number, peer: number, peerName: string, limit: number): BenchRow {
  const ratio = sp / peer;
  return {
    area: AREA,
    name,
    savepoint: `${fmt(sp * 1000)} µs`,
    baseline: `${fmt(peer * 1000)} µs (${peerName})`,
    ratio: `${fmt(ratio)}×`,
    target: `≤ ${limit}×`,
    met: ratio <= limit,
  };
}

async function writeRow(kb: number, rounds: number, limit: number): Promise<BenchRow> {
  const states = Array.from({ length: 64 }, (_, i) => stateOf(kb, i));
  const sp = savepointStep(memoryStorage(), 'bench');
  const lg = langGraphStep(new MemorySaver(), 'bench');
  // Warm up both (JIT, first-write paths).
  for (let i = 0; i < 50; i++) {
    await sp.step(states[i % 64]!);
    await lg(states[i % 64]!, i);
  }
  let n = 50;
  const m = await pairwise(
    rounds,
    () => sp.step(states[n++ % 64]!),
    () => lg(states[n % 64]!, n),
  );
  await sp.writer.close();
  return ratioRow(`memory, ${kb} KB state: checkpoint() vs put()+putWrites()`, m.a, m.b, 'MemorySaver', limit);
}

async function readRow(rounds: number): Promise<BenchRow> {
  const storage = memoryStorage();
  const sp = savepointStep(storage, 'bench');
  const saver = new MemorySaver();
  const lg = langGraphStep(saver, 'bench');
  for (let i = 0; i < 100; i++) {
    const s = stateOf(1, i);
    await sp.step(s);
    await lg(s, i);
  }
  await sp.writer.close();
  const config = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };
  const m = await pairwise(
    rounds,
    async () => {
      const plan = await planResume({ storage, profile: defaultProfile, runId: 'bench' });
      if (!plan.snapshot) throw new Error('no snapshot');
    },
    async () => {
      const t = await saver.getTuple(config);
      if (!t) throw new Error('no tuple');
    },
  );
  return ratioRow('memory, 1 KB state: latest read, planResume() vs getTuple()', m.a, m.b, 'MemorySaver', 1.0);
}

/**
 * Cost of checkpoints #total-199…#total of one long run against #1…200 of a fresh run in the
 * same store, the two interleaved one checkpoint at a time: disk and CPU load drift within
 * seconds on a shared machine, so timing the first 200 and the last 200 minutes apart would
 * compare two different machines. The long run's first total-200 checkpoints are not timed.
 */
async function growth(
  storage: StorageAdapter,
  total: number,
  stepper: Stepper = savepointStep,
  runIds: readonly [string, string] = ['growth-long', 'growth-fresh'],
): Promise<{ first: number; last: number }> {
  const long = stepper(storage, runIds[0]);
  for (let i = 0; i < total - 200; i++) await long.step({ step: i, note: 'x'.repeat(1000) });
  const fresh = stepper(storage, runIds[1]);
  const m = await pairwise(
    200,
    (i) => long.step({ step: total - 200 + i, note: 'x'.repeat(1000) }),
    (i) => fresh.step({ step: i, note: 'x'.repeat(1000) }),
  );
  await long.writer.close();
  await fresh.writer.close();
  return { first: m.b, last: m.a };
}

/** A UUID v4, as phasedWorkflow's run ids must be. */
const newRunId = (): string => globalThis.crypto.randomUUID();

function growthRow(where: string, total: number, g: { first: number; last: number }): BenchRow {
  const ratio = g.last / g.first;
  return {
    area: AREA,
    name: `growth on ${where}: checkpoints #${(total - 199).toLocaleString('en-US')}–${total.toLocaleString('en-US')} vs #1–200 (1 KB)`,
    savepoint: `${fmt(g.last * 1000)} µs`,
    baseline: `${fmt(g.first * 1000)} µs (#1–200)`,
    ratio: `${fmt(ratio)}×`,
    target: '≤ 1.2×',
    met: ratio <= 1.2,
  };
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += statSync(join(e.parentPath, e.name)).size;
  }
  return total;
}

async function footprintRow(count: number): Promise<BenchRow> {
  const base = mkdtempSync(join(tmpdir(), 'savepoint-bench-peers-'));
  try {
    const sp = savepointStep(fsStorage({ dir: join(base, 'sp'), layout: 'files' }), 'footprint');
    const saver = SqliteSaver.fromConnString(join(base, 'lg.sqlite'));
    const lg = langGraphStep(saver, 'footprint');
    for (let i = 0; i < count; i++) {
      const s = stateOf(200, i);
      await sp.step(s);
      await lg(s, i);
    }
    await sp.writer.close();
    const spBytes = dirBytes(join(base, 'sp'));
    const lgBytes = readdirSync(base)
      .filter((f) => f.startsWith('lg.sqlite'))
      .reduce((sum, f) => sum + statSync(join(base, f)).size, 0);
    const ratio = spBytes / lgBytes;
    return {
      area: AREA,
      name: `footprint: ${count} × 200 KB slowly changing, default settings (fs) vs SqliteSaver file`,
      savepoint: `${fmt(spBytes / 1e6)} MB`,
      baseline: `${fmt(lgBytes / 1e6)} MB (SqliteSaver)`,
      ratio: `${fmt(ratio)}×`,
      target: '≤ 0.1×',
      met: ratio <= 0.1,
    };
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** One checkpoint through `encryptedStorage(store())` against one through a plain `store()`, interleaved. */
async function encryptedRow(where: string, store: (name: string) => StorageAdapter, kb: number, rounds: number): Promise<BenchRow> {
  const states = Array.from({ length: 64 }, (_, i) => stateOf(kb, i));
  const enc = savepointStep(encryptedStorage(store('encrypted'), { keys: EncryptionKey.generate() }), 'bench');
  const plain = savepointStep(store('plain'), 'bench');
  for (let i = 0; i < 50; i++) {
    await enc.step(states[i % 64]!);
    await plain.step(states[i % 64]!);
  }
  let n = 50;
  const m = await pairwise(
    rounds,
    () => enc.step(states[n++ % 64]!),
    () => plain.step(states[n % 64]!),
  );
  await enc.writer.close();
  await plain.writer.close();
  return ratioRow(`encrypted ${where}, ${kb} KB state: checkpoint() vs unencrypted`, m.a, m.b, `${where} plain`, 1.2);
}

async function encryptedRows(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const base = mkdtempSync(join(tmpdir(), 'savepoint-bench-encrypted-'));
  try {
    for (const kb of [1, 200]) {
      const rounds = (kb === 1 ? 2000 : 300) / (QUICK ? 4 : 1);
      rows.push(await encryptedRow('memoryStorage', () => memoryStorage(), kb, rounds));
      rows.push(
        await encryptedRow('fsStorage', (name) => fsStorage({ dir: join(base, `${name}-${kb}`), layout: 'files' }), kb, rounds / 4),
      );
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
  return rows;
}

export async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const only = process.env.SAVEPOINT_BENCH_PEERS?.split(',');
  const want = (k: string): boolean => !only || only.includes(k);
  if (want('write1')) rows.push(await writeRow(1, QUICK ? 1000 : 4000, 1.0));
  if (want('read')) rows.push(await readRow(QUICK ? 1000 : 4000));
  if (want('write200')) rows.push(await writeRow(200, QUICK ? 200 : 600, 1.5));
  const total = QUICK ? 2000 : 10_000;
  if (want('growth')) {
    rows.push(growthRow('memoryStorage', total, await growth(memoryStorage(), total)));
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-bench-growth-'));
    try {
      rows.push(growthRow('fsStorage', total, await growth(fsStorage({ dir, layout: 'files' }), total)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (want('growth') || want('phased'))
    rows.push(
      growthRow('memoryStorage, phasedWorkflow', total, await growth(memoryStorage(), total, phasedStep, [newRunId(), newRunId()])),
    );
  if (want('footprint')) rows.push(await footprintRow(QUICK ? 200 : 500));
  if (want('encrypted')) rows.push(...(await encryptedRows()));
  return rows;
}
