/**
 * Child of huge-file.process.test.ts: resumes a run whose store holds a huge (sparse) file, and
 * reads that file through fsStorage. Prints one JSON line: what planResume answered, what the
 * get answered, and the process's peak memory. Run: node --import tsx huge-file-child.ts DIR RUN KEY
 */
import { defaultProfile, isCheckpointError, planResume } from '../../../src/index.js';
import { fsStorage } from '../../../src/entries/fs.js';

const [dir, runId, hugeKey] = process.argv.slice(2) as [string, string, string];
const storage = fsStorage({ dir, layout: 'files' });
const out: Record<string, unknown> = {};
try {
  // 'scan': every history file is looked at, the huge one too.
  const plan = await planResume({ storage, profile: defaultProfile, runId, newerCheck: 'scan' });
  out.resumed = { sequence: plan.snapshot.sequence, skipped: plan.skipped.map((s) => ({ key: s.key, reasonCode: s.reasonCode })) };
} catch (err) {
  out.resumed = { error: isCheckpointError(err) ? err.reasonCode : String(err) };
}
try {
  await storage.get(hugeKey);
  out.get = 'read';
} catch (err) {
  out.get = isCheckpointError(err) ? { reasonCode: err.reasonCode, message: err.message, details: err.details } : String(err);
}
await storage.close();
out.maxRssBytes = process.resourceUsage().maxRSS * 1024;
process.stdout.write(`${JSON.stringify(out)}\n`);
