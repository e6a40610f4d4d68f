import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriter, planResume } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { runCli } from '../../src/cli/run.js';
import { PHASED_RUN, putFixtures } from '../support/foreign.js';
import { captureIo } from '../support/cli-io.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const io = captureIo;

interface Finding {
  key: string;
  level: string;
  reasonCode: string;
}

async function cli(args: string[]): Promise<{ code: number; out: string }> {
  const out = io();
  const code = await runCli(args, out);
  return { code, out: out.out };
}

describe('savepoint verify / ls on runs other tools wrote', () => {
  it('reports an n8n run as unsealed warnings, not corrupt; a changed savepoint-sealed history file stays a problem', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-foreign-'));
    dirs.push(dir);
    const storage = fsStorage({ dir });
    const run = `checkpoints/${PHASED_RUN}`;
    await putFixtures(storage, 'phased-workflow', {
      [`${run}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
      [`${run}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
      [`${run}/latest.json`]: 'latest.json',
    });
    let res = await cli(['verify', '--json', '--profile', 'phasedWorkflow', '--dir', dir]);
    let json = JSON.parse(res.out) as { problems: number; findings: Finding[] };
    expect(res.code).toBe(0);
    expect(json.problems).toBe(0);
    expect(
      json.findings
        .filter((f) => f.reasonCode === 'checkpoint_unsealed')
        .map((f) => f.key)
        .sort(),
    ).toEqual([`${run}/cp_1_phase_complete.json`, `${run}/cp_2_gate_decision.json`, `${run}/latest.json`]);

    const ls = await cli(['ls', PHASED_RUN, '--json', '--profile', 'phasedWorkflow', '--dir', dir]);
    expect(
      (JSON.parse(ls.out) as { snapshots: { sequence: number; readWarnings?: string[] }[] }).snapshots.map((s) => [
        s.sequence,
        s.readWarnings,
      ]),
    ).toEqual([
      [1, ['checkpoint_unsealed']],
      [2, ['checkpoint_unsealed']],
    ]);

    // savepoint continues the run; then one byte of its sealed cp_003 changes.
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN });
    const writer = createWriter({ storage, profile: phasedWorkflow, runId: PHASED_RUN, coalesceWindowMs: 0 });
    expect((await writer.checkpoint({ source: 'iteration', status: 'in_progress', payload: plan.payload as never })).ok).toBe(true);
    await writer.close();
    // Closed before a file is changed behind its back: an open journal store replays its records over such a change when reopened.
    await storage.close();
    const sealedPath = join(dir, run, 'cp_003_iteration.json');
    writeFileSync(sealedPath, readFileSync(sealedPath, 'utf8').replace('"cost_accumulated":0.87', '"cost_accumulated":0.86'));
    res = await cli(['verify', '--json', '--profile', 'phasedWorkflow', '--dir', dir]);
    json = JSON.parse(res.out) as { problems: number; findings: Finding[] };
    expect(res.code).toBe(1);
    expect(json.findings).toContainEqual(
      expect.objectContaining({ key: `${run}/cp_003_iteration.json`, level: 'problem', reasonCode: 'checkpoint_integrity_mismatch' }),
    );
  });
});
