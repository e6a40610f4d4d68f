/**
 * A writer in its own process for the journal-fairness run: checkpoints run RUN in the
 * journaled fs store DIR with 1–5 ms between checkpoints, printing `ack <count>` for each
 * acknowledged one and `fail <reason code>` for each refused one, until `stop` on stdin;
 * then `done <acks> <fails>`.
 */
import { createInterface } from 'node:readline';
import { fsStorage } from '../../src/entries/fs.js';
import { createWriter, defaultProfile } from '../../src/index.js';

const [dir, runId] = process.argv.slice(2);
const storage = fsStorage({ dir: dir!, cleanupOnOpen: false, journal: true });
const writer = createWriter({ storage, profile: defaultProfile, runId: runId!, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
let stopped = false;
let go: () => void = () => undefined;
const started = new Promise<void>((r) => (go = r));
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'go') go();
  if (line === 'stop') stopped = true;
});
process.stdout.write('ready\n');
await started;
let acks = 0;
let fails = 0;
while (!stopped) {
  const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: acks + fails, pid: process.pid } });
  if (r.ok) process.stdout.write(`ack ${++acks}\n`);
  else process.stdout.write(`fail ${++fails} ${r.reasonCode} ${String(r.error.details?.['reason'] ?? '')}\n`);
  await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 4));
}
process.stdout.write(`done ${acks} ${fails}\n`);
await writer.close().catch(() => undefined);
await storage.close();
process.exit(0);
