/**
 * Child of journal-replay-owed.process.test.ts: opens the store at DIR with the journal's applies
 * and lock hand-over held back (test seams), commits the puts the parent names, prints `acked`,
 * and waits to be SIGKILLed — a holder that dies with its records acknowledged and not applied.
 */
import { createFsStorage } from '../../../src/storage/fs/index.js';

const [dir, ...puts] = process.argv.slice(2) as [string, ...string[]];
const hour = 3_600_000;
const store = createFsStorage({ dir }, { journalLingerMs: hour, journalApplyQuietMs: hour, journalApplyLagMs: hour });
for (const put of puts) {
  const [key, text] = put.split('=') as [string, string];
  await store.put(key, new TextEncoder().encode(text));
}
process.stdout.write('acked\n');
setInterval(() => undefined, hour);
