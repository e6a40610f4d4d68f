/**
 * planResume on the GitHub adapter (against the local emulator; no network): each storage
 * read is one REST request, so the newer check's cost is counted in requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, planResume } from 'savepoint';
import { phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { utf8Encode } from '../../src/codec/utf8.js';
import { githubStorage } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { readFileSync } from 'node:fs';

const base = JSON.parse(
  readFileSync(new URL('../fixtures/resume/phased-workflow.payload.json', import.meta.url), 'utf8'),
) as PhasedWorkflowPayload;
const RUN = '3d6f0a2b-8c4e-4f1a-9b7d-2e5c8a1f0b3d';
let gh: GitHubEmulator;

beforeAll(async () => {
  gh = await startGitHubEmulator({ token: 'emulator-token' });
});
afterAll(async () => {
  await gh.close();
});

const open = () =>
  githubStorage({
    owner: gh.owner,
    repo: gh.repo,
    token: 'emulator-token',
    baseUrl: gh.url,
    minWriteIntervalMs: 0,
    emergencyQueue: 'memory',
  });
const requests = () => gh.requestLog.length;

describe('planResume on githubStorage (emulator)', () => {
  it('resumes a phased run; the probe costs one request per possible next key, lock mode two requests in all', async () => {
    const storage = open();
    const writer = createWriter({ storage, profile: phasedWorkflow, runId: RUN, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    for (const cost of [1, 2, 3]) {
      const r = await writer.checkpoint({
        source: 'phase_complete',
        status: 'in_progress',
        payload: { ...base, state_snapshot: { ...base.state_snapshot, cost_accumulated: cost } },
      });
      expect(r.ok).toBe(true);
    }
    await writer.close();

    const reader = open();
    // The locate's cost alone: the profile's rule without its history read (after a
    // phase_complete it reads earlier snapshots to name the next phase; counted below).
    const rule = (
      s: Parameters<NonNullable<typeof phasedWorkflow.resume>>[0],
      c: Parameters<NonNullable<typeof phasedWorkflow.resume>>[1],
    ) => phasedWorkflow.resume!(s, c);
    let before = requests();
    const plan = await planResume({ storage: reader, profile: phasedWorkflow, runId: RUN, rule });
    expect(plan).toMatchObject({ at: 'phase_2', snapshot: { sequence: 3 }, source: { origin: 'latest', latest: 'valid' } });
    const probed = requests() - before;
    before = requests();
    const named = await planResume({ storage: reader, profile: phasedWorkflow, runId: RUN, newerCheck: 'lock' });
    expect(named.at).toBe('phase_2');
    const withHistory = requests() - before;
    before = requests();
    const locked = await planResume({ storage: reader, profile: phasedWorkflow, runId: RUN, newerCheck: 'lock', rule });
    expect(locked.snapshot.sequence).toBe(3);
    expect(requests() - before).toBe(2); // latest.json and the (released) lock
    expect(probed).toBe(1 + 18); // latest.json + cp_004_<trigger>.json[.gz] for the nine triggers
    // The history read that names the next phase: one listing and the two earlier snapshots (neither names phase_2).
    expect(withHistory - 2).toBeLessThanOrEqual(4);

    // A damaged latest.json in the repository: the index's top entry is used.
    await reader.put(phasedWorkflow.layout.latestKey(RUN), utf8Encode('{"checkpoint_id": "truncated'));
    const fallback = await planResume({ storage: reader, profile: phasedWorkflow, runId: RUN });
    expect(fallback.snapshot.sequence).toBe(3);
    expect(fallback.source).toMatchObject({ origin: 'index', latest: 'invalid', key: `checkpoints/${RUN}/cp_003_phase_complete.json` });
    expect(fallback.skipped).toEqual([expect.objectContaining({ kind: 'latest', reasonCode: 'checkpoint_schema_invalid' })]);
    await reader.close();
    await storage.close();
  });
});
