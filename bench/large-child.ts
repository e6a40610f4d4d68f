/**
 * One measured process of `npm run bench -- large` (see large.bench.ts). argv: mode, payload
 * MiB, directory (fs modes), maxSnapshotBytes (or ''), shape. Builds the payload (100 flat ASCII
 * strings; with shape `nested`, 100 lists of small records of about 100 bytes of JSON each),
 * then does what `mode` says, and prints its peak RSS in bytes (process.resourceUsage).
 *
 * - `baseline`: only builds the payload (and keeps it alive, as the others do);
 * - `write-memory` / `write-fs`: one checkpoint of it on memoryStorage / fsStorage;
 * - `write-memory-twice`: two checkpoints on memoryStorage, one string changed between them
 *   (the store then holds two copies; the second checkpoint compares its state with the first);
 * - `resume`: planResume of the run `write-fs` left in the directory (the restored payload is
 *   the payload again, so the baseline's share is the same).
 */
import { createWriter, defaultProfile, memoryStorage, planResume, type JsonValue } from 'savepoint';
import { fsStorage } from 'savepoint/fs';

const [mode = 'baseline', mib = '64', dir = '', limit = '', shape = 'strings'] = process.argv.slice(2);
const STRINGS = 100;

function buildPayload(bytes: number): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  const each = Math.floor(bytes / STRINGS);
  if (shape === 'nested') {
    // The other case: many small values (records of ~100 bytes of JSON), no big string.
    const records = Math.floor(each / 100);
    for (let i = 0; i < STRINGS; i++) {
      const list: JsonValue[] = [];
      for (let r = 0; r < records; r++)
        list.push({ id: i * records + r, name: `item ${i}-${r}`, tags: ['a', 'b'], note: 'abcdefghijklmnopqrstuvwxyz0123456789' });
      out[`s${String(i).padStart(3, '0')}`] = list;
    }
    return out;
  }
  // Flat one-byte strings, each different (a repeat() would be a rope the encoder flattens).
  for (let i = 0; i < STRINGS; i++)
    out[`s${String(i).padStart(3, '0')}`] = Buffer.alloc(each, `${i}:abcdefghijklmnopqrstuvwxyz `).toString('latin1');
  return out;
}

const payloadBytes = Number(mib) * 1024 * 1024;
const keep: { payload?: unknown; result?: unknown } = {};
if (mode !== 'resume') keep.payload = buildPayload(payloadBytes);
const maxSnapshotBytes = limit ? Number(limit) : undefined;
// Readers refuse a stored document over the profile's limit: a limit above the default is the profile's.
const profile = maxSnapshotBytes ? { ...defaultProfile, maxSnapshotBytes } : defaultProfile;
const options = {
  profile,
  runId: 'large',
  heartbeatIntervalMs: false as const,
  ...(maxSnapshotBytes ? { maxSnapshotBytes } : {}),
};
if (mode === 'write-memory' || mode === 'write-fs' || mode === 'write-memory-twice') {
  const storage = mode === 'write-fs' ? fsStorage({ dir, layout: 'files' }) : memoryStorage();
  const writer = createWriter({ ...options, storage });
  const payload = keep.payload as Record<string, JsonValue>;
  const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
  if (!r.ok) throw r.error;
  if (mode === 'write-memory-twice') {
    payload.s000 = shape === 'nested' ? [] : Buffer.alloc((payload.s000 as string).length, 'changed ').toString('latin1');
    const again = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    if (!again.ok || again.outcome !== 'written') throw new Error('the second checkpoint was not written');
  }
  await writer.close();
  keep.result = storage; // memoryStorage keeps its copy: that is part of what a write costs there
} else if (mode === 'resume') {
  const storage = fsStorage({ dir, layout: 'files' });
  const plan = await planResume({ storage, profile, runId: 'large' });
  const restored = plan.payload as Record<string, JsonValue>;
  if (Object.keys(restored).length !== STRINGS) throw new Error('resumed payload is not the one written');
  keep.payload = restored;
} else if (mode !== 'baseline') throw new Error(`unknown mode ${mode}`);
process.stdout.write(`${process.resourceUsage().maxRSS * 1024}\n`);
