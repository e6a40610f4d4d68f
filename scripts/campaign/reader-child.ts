/**
 * A reader in its own process, for the huge-sparse-file run: resumes RUN of the fs store DIR
 * (every file looked at) and reads KEY with a plain get, then prints one JSON line — what
 * resume answered, what the get answered, peak memory. A crash (SIGABRT) prints nothing.
 */
import { fsStorage } from '../../src/entries/fs.js';
import { defaultProfile, planResume } from '../../src/index.js';
import { journalOptions } from './journal-mode.js';
import { describe } from './shared.js';

const [dir, runId, key, mode] = process.argv.slice(2) as [string, string, string, string | undefined];
const storage = fsStorage({ dir, cleanupOnOpen: false, ...journalOptions(mode) });
const out: Record<string, unknown> = {};
try {
  const plan = await planResume({ storage, profile: defaultProfile, runId, newerCheck: 'scan' });
  out.sequence = plan.snapshot.sequence;
  out.skipped = plan.skipped.map((s) => `${s.reasonCode} ${s.key}`);
} catch (err) {
  out.resumeError = describe(err);
}
try {
  await storage.get(key);
  out.get = 'read';
} catch (err) {
  out.get = describe(err);
}
await storage.close();
out.maxRssBytes = process.resourceUsage().maxRSS * 1024;
process.stdout.write(`${JSON.stringify(out)}\n`);
