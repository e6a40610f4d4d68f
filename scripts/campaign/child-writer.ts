/**
 * A writer in its own process, for the crash and lease-pause runs: checkpoints run RUN in
 * the fs store DIR as fast as it can and prints `ack <sequence> <id>` for each one the
 * writer acknowledged, until it is killed. MODE (optional): `journal`, or `journal-rotating`
 * (the journal checkpointed every few checkpoints, so kills land mid-rotation too).
 */
import { fsStorage } from '../../src/entries/fs.js';
import { createWriter, defaultProfile } from '../../src/index.js';
import { journalOptions } from './journal-mode.js';

const [dir, runId, mode] = process.argv.slice(2);
const storage = fsStorage({ dir: dir!, cleanupOnOpen: false, ...journalOptions(mode) });
const writer = createWriter({ storage, profile: defaultProfile, runId: runId!, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
process.stdout.write('ready\n');
for (let i = 1; ; i++) {
  const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: i, pid: process.pid } });
  process.stdout.write(r.ok ? `ack ${r.snapshot.sequence} ${r.snapshot.id}\n` : `fail ${r.reasonCode}\n`);
}
