/**
 * `npm run campaign [-- --quick] [-- <run> …]`: the fault campaign behind the figures in
 * docs/storage.md. Each run is bounded in count and time, prints
 * `<run>: tried N, failed M` (or why it was skipped), and the total comes last; the exit
 * code is 1 when anything failed. Not part of `npm test`: the full campaign takes minutes.
 */
import { crashJournalRun, crashRun, leasePauseRun } from './processes.js';
import { pruneDuringWriteRun, twoWriterRun } from './concurrency.js';
import { damagedFileRun, enospcJournalRun, enospcRun, symlinkRaceJournalRun, symlinkRaceRun } from './storage-faults.js';
import { erofsRun, journalFairnessRun, powerLossRun } from './journal.js';
import { fuzzRun, hugeInputRun } from './inputs.js';
import { hugeSparseFileRun, surrogateKeysRun } from './readers.js';
import type { CampaignRun } from './shared.js';

const RUNS: readonly CampaignRun[] = [
  crashRun,
  crashJournalRun,
  twoWriterRun,
  pruneDuringWriteRun,
  leasePauseRun,
  journalFairnessRun,
  enospcRun,
  enospcJournalRun,
  erofsRun,
  damagedFileRun,
  symlinkRaceRun,
  symlinkRaceJournalRun,
  powerLossRun,
  fuzzRun,
  hugeInputRun,
  hugeSparseFileRun,
  surrogateKeysRun,
];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.filter((a) => !a.startsWith('--'));
const unknown = only.filter((n) => !RUNS.some((run) => run.name === n));
if (unknown.length > 0) {
  process.stderr.write(`unknown run(s): ${unknown.join(', ')}; runs: ${RUNS.map((run) => run.name).join(', ')}\n`);
  process.exit(2);
}

let tried = 0;
let failed = 0;
for (const run of RUNS.filter((x) => only.length === 0 || only.includes(x.name))) {
  const started = Date.now();
  let res;
  try {
    res = await run.run(quick);
  } catch (err) {
    res = { tried: 1, failed: 1, notes: [`the run itself threw: ${err instanceof Error ? err.message : String(err)}`] };
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if ('skipped' in res && res.skipped) {
    process.stdout.write(`${run.name}: skipped (${res.skipped})\n`);
    continue;
  }
  tried += res.tried;
  failed += res.failed;
  process.stdout.write(`${run.name}: tried ${res.tried}, failed ${res.failed} (${secs} s)\n`);
  for (const note of res.notes) process.stdout.write(`  - ${note}\n`);
}
process.stdout.write(`total: tried ${tried}, failed ${failed}${quick ? ' (quick)' : ''}\n`);
process.exitCode = failed > 0 ? 1 : 0;
