/**
 * Child of descriptor-limit.process.test.ts, started under a low descriptor limit (`ulimit -n`).
 * Scenario `batch`: 2,000 puts over 300 directories at once — one `batch()` with the journal,
 * as many concurrent `put`s without — then a second round replacing half of them and adding
 * 500 (the directories exist by then), everything read back. Scenario `checkpoint`: two
 * checkpoints of a ≥ 4 MiB state of small records with defaultProfile (thousands of content
 * chunks in one write), resumed. Prints one JSON line: `ok`, or the failure's reason code and
 * message, and the most descriptors seen open.
 * Run: node --import tsx descriptor-limit-child.ts DIR journal|direct batch|checkpoint
 */
import { readdirSync } from 'node:fs';
import { createWriter, defaultProfile, isCheckpointError, planResume, type JsonValue } from '../../../src/index.js';
import { fsStorage } from '../../../src/entries/fs.js';
import type { BatchOperation } from '../../../src/contract/storage.js';

const [dir, mode, scenario] = process.argv.slice(2) as [string, 'journal' | 'direct', 'batch' | 'checkpoint'];
const storage = fsStorage({ dir, journal: mode === 'journal' });
let peak = 0;
/** Counts the open descriptors (itself one more: at the limit, it fails, and the peak is the limit). */
function sample(): void {
  try {
    peak = Math.max(peak, readdirSync('/proc/self/fd').length);
  } catch {
    peak = Infinity;
  }
}
const sampler = setInterval(sample, 5);

const keyOf = (i: number): string => `many/d${i % 300}/k${i}.bin`;
const bytesOf = (i: number, round: number): Uint8Array => new TextEncoder().encode(`value ${i} of round ${round} `.repeat(1 + (i % 7)));

/** Puts `keys` in one atomic batch (journal) or all at once (direct: no batch()). */
async function putAll(keys: readonly number[], round: number): Promise<void> {
  if (storage.batch) {
    const ops: BatchOperation[] = keys.map((i) => ({ type: 'put', key: keyOf(i), bytes: bytesOf(i, round) }));
    await storage.batch(ops);
  } else await Promise.all(keys.map((i) => storage.put(keyOf(i), bytesOf(i, round))));
}

async function batchScenario(): Promise<void> {
  const first = Array.from({ length: 2000 }, (_, i) => i);
  await putAll(first, 1);
  const second = [...first.filter((i) => i % 2 === 0), ...Array.from({ length: 500 }, (_, i) => 2000 + i)];
  await putAll(second, 2);
  const replaced = new Set(second);
  for (let i = 0; i < 2500; i++) {
    const got = await storage.get(keyOf(i));
    const want = bytesOf(i, replaced.has(i) ? 2 : 1);
    if (!got || Buffer.compare(Buffer.from(got.bytes), Buffer.from(want)) !== 0)
      throw new Error(`${keyOf(i)} does not hold its last bytes`);
  }
}

/** About `mib` MiB of small records (as the report's reproduction: ~100 bytes each). */
const recordsOf = (mib: number, salt: number): JsonValue =>
  Array.from({ length: Math.floor((mib * 1048576) / 100) }, (_, i) => ({
    id: i,
    name: `record-${i}`,
    value: (i * 7919 + salt) % 100003,
    tags: ['a', 'b'],
  }));

async function checkpointScenario(): Promise<void> {
  const writer = createWriter({ storage, profile: defaultProfile, runId: 'r', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (const salt of [0, 1]) {
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { salt, records: recordsOf(4, salt) } });
    if (!r.ok) throw r.error;
  }
  await writer.close();
  const plan = await planResume({ storage, runId: 'r' });
  const payload = plan.snapshot.payload as { salt: number; records: unknown[] };
  if (plan.snapshot.sequence !== 2 || payload.salt !== 1 || payload.records.length !== Math.floor((4 * 1048576) / 100))
    throw new Error(`resumed sequence ${plan.snapshot.sequence}, not the second checkpoint`);
}

const out: Record<string, unknown> = {};
try {
  await (scenario === 'batch' ? batchScenario() : checkpointScenario());
  await storage.close();
  out.ok = true;
} catch (err) {
  out.ok = false;
  out.error = isCheckpointError(err) ? `${err.reasonCode}: ${err.message}` : String(err);
}
clearInterval(sampler);
sample();
out.peakDescriptors = Number.isFinite(peak) ? peak : 'the limit';
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
