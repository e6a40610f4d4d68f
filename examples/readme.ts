/**
 * The README's first example, verbatim between the two marker comments
 * (tests/docs/readme-example.test.ts holds them equal), run in a temporary directory.
 *
 *   npx tsx examples/readme.ts
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.chdir(mkdtempSync(join(tmpdir(), 'savepoint-readme-')));

// --- README ---
import { createWriter, findIncompleteRuns, planResume } from 'savepoint';
import { fsStorage } from 'savepoint/fs';

interface AgentState {
  step: number;
  notes: string[];
}
const storage = fsStorage({ dir: './agent-state' }); // or memoryStorage(), postgresStorage(), githubStorage()

// On startup: resume whatever did not finish.
for (const run of await findIncompleteRuns<AgentState>({ storage })) {
  const plan = await planResume<AgentState>({ storage, runId: run.runId });
  console.log(`resume ${run.runId} at step ${plan.snapshot.payload.step}`, plan.warnings);
}

// While working: checkpoint at every boundary. Storage failures never throw into the agent.
const writer = createWriter<AgentState>({ storage, runId: 'run-42' });
const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 3, notes: [] } });
if (!r.ok) console.warn('not saved:', r.reasonCode);
await writer.close();
// --- end README ---

// A second start finds the run the first one left in progress.
const again = await findIncompleteRuns<AgentState>({ storage });
console.log(`incomplete runs on the next start: ${again.map((run) => run.runId).join(', ')}`);
