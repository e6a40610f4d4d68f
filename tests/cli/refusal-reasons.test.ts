import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, findIncompleteRuns, isCheckpointError, planResume, type CheckpointError } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { planExecutor } from 'savepoint/plan-executor';
import { runCliCaptured } from '../support/cli-io.js';
import { PHASED_RUN, putFixtures, tempDirs } from '../support/foreign.js';

const tempDir = tempDirs('savepoint-refusal-');

interface Finding {
  key: string;
  level: string;
  reasonCode: string;
  message: string;
}

async function verifyJson(args: string[]): Promise<{ code: number; problems: number; findings: Finding[] }> {
  const r = await runCliCaptured(['verify', '--json', ...args]);
  const json = JSON.parse(r.out) as { problems: number; findings: Finding[] };
  return { code: r.code, ...json };
}

async function resumeJsonError(args: string[]): Promise<{ code: number; error: { reasonCode: string; details?: { issues?: string[] } } }> {
  const r = await runCliCaptured(['resume', '--json', ...args]);
  return { code: r.code, error: (JSON.parse(r.err) as { error: { reasonCode: string; details?: { issues?: string[] } } }).error };
}

/** A plan-executor store holding the spec's example `02-CHECKPOINT.json` with `change` applied. */
function planStore(change: Record<string, unknown>): string {
  const dir = tempDir();
  const example = JSON.parse(
    readFileSync(new URL('../fixtures/foreign/plan-executor/02-CHECKPOINT.spec-example.json', import.meta.url), 'utf8'),
  );
  mkdirSync(join(dir, 'plans'));
  writeFileSync(join(dir, 'plans/02-CHECKPOINT.json'), JSON.stringify({ ...example, ...change }));
  return dir;
}

describe('why a file was refused: resume and verify say the same thing', () => {
  it('a default-profile run copied with cp -r: verify names the run id inside, runs lists it invalid, resume lists each refused file', async () => {
    const dir = tempDir();
    const storage = fsStorage({ layout: 'files', dir });
    const writer = createWriter({ storage, runId: 'run-a', coalesceWindowMs: 0 });
    for (let i = 0; i < 3; i++) await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
    await writer.close();
    await storage.close();
    cpSync(join(dir, 'checkpoints/run-a'), join(dir, 'checkpoints/run-b'), { recursive: true });

    const verify = await verifyJson(['run-b', '--dir', dir]);
    expect(verify.code).toBe(1);
    // Not "index entry N points at missing …" per entry: one finding per file, saying the id inside is another run's.
    expect(verify.findings.some((f) => /points at missing/.test(f.message))).toBe(false);
    expect(verify.findings.filter((f) => f.level === 'problem').map((f) => f.reasonCode)).not.toContain('checkpoint_integrity_mismatch');
    const latest = verify.findings.find((f) => f.key === 'checkpoints/run-b/latest.json')!;
    expect(latest).toMatchObject({ level: 'problem', reasonCode: 'checkpoint_schema_invalid' });
    expect(latest.message).toMatch(/names run "run-a".*run "run-b"/);
    expect(verify.findings.find((f) => f.key === 'checkpoints/run-b/index.json')?.message).toMatch(/names run "run-a"/);

    const runs = JSON.parse((await runCliCaptured(['runs', '--json', '--dir', dir])).out) as { runs: { runId: string; status: string }[] };
    expect(runs.runs.find((r) => r.runId === 'run-b')!.status).toBe('invalid (checkpoint_schema_invalid)');
    expect(runs.runs.find((r) => r.runId === 'run-a')!.status).toBe('in_progress');

    const text = await runCliCaptured(['resume', 'run-b', '--dir', dir]);
    expect(text.code).toBe(1);
    expect(text.err).toContain(`checkpoints/run-b/latest.json: ${latest.message}`);
    const json = await resumeJsonError(['run-b', '--dir', dir]);
    expect(json.error.reasonCode).toBe('checkpoint_no_valid_snapshot');
    expect(json.error.details!.issues).toContain(`checkpoints/run-b/latest.json: ${latest.message}`);
  });

  it('a phased run copied under another run id: verify reports what resume refuses', async () => {
    const dir = tempDir();
    const storage = fsStorage({ layout: 'files', dir });
    await putFixtures(storage, 'phased-workflow', {
      [`checkpoints/${PHASED_RUN}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
      [`checkpoints/${PHASED_RUN}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
      [`checkpoints/${PHASED_RUN}/latest.json`]: 'latest.json',
    });
    await storage.close();
    const other = '11111111-2222-4333-8444-555555555555';
    cpSync(join(dir, 'checkpoints', PHASED_RUN), join(dir, 'checkpoints', other), { recursive: true });
    const args = ['--profile', 'phasedWorkflow', '--dir', dir];
    const verify = await verifyJson([other, ...args]);
    expect(verify.code).toBe(1);
    expect(verify.problems).toBe(3);
    const resume = await resumeJsonError([other, ...args]);
    expect(resume.code).toBe(1);
    for (const f of verify.findings) expect(resume.error.details!.issues).toContain(`${f.key}: ${f.message}`);
    // The original still verifies clean.
    expect((await verifyJson([PHASED_RUN, ...args])).problems).toBe(0);
  });

  it('plan_number "2" in 02-CHECKPOINT.json is an identity (schema) error, not checkpoint_integrity_mismatch, in resume and verify', async () => {
    const dir = planStore({ plan_number: '2' });
    const storage = fsStorage({ layout: 'files', dir });
    const err = (await planResume({ storage, profile: planExecutor, runId: '02' }).catch((e: unknown) => e)) as CheckpointError;
    expect(isCheckpointError(err, 'checkpoint_no_valid_snapshot')).toBe(true);
    expect(err.details.reasonCodes).toEqual(['checkpoint_schema_invalid']);
    expect((err.details.issues as string[])[0]).toMatch(/^plans\/02-CHECKPOINT\.json: the document names run "2".*run "02"/);
    await storage.close();
    const verify = await verifyJson(['--profile', 'planExecutor', '--dir', dir]);
    expect(verify.code).toBe(1);
    expect(verify.findings).toContainEqual(
      expect.objectContaining({ key: 'plans/02-CHECKPOINT.json', level: 'problem', reasonCode: 'checkpoint_schema_invalid' }),
    );
  });

  it('the first failing field reaches the resume error, findIncompleteRuns and the CLI, in the words verify uses', async () => {
    const dir = planStore({ last_activity: 'yesterday' });
    const storage = fsStorage({ layout: 'files', dir });
    const unreadable: CheckpointError[] = [];
    expect(await findIncompleteRuns({ storage, profile: planExecutor, onUnreadable: (_, e) => unreadable.push(e) })).toEqual([]);
    expect(unreadable[0]!.details.issues).toEqual(['plans/02-CHECKPOINT.json: /last_activity Invalid ISO datetime']);
    expect(unreadable[0]!.message).toContain('/last_activity Invalid ISO datetime');
    await storage.close();
    const text = await runCliCaptured(['resume', '02', '--profile', 'planExecutor', '--dir', dir]);
    expect(text.err).toContain('  plans/02-CHECKPOINT.json: /last_activity Invalid ISO datetime\n');
    const verify = await verifyJson(['--profile', 'planExecutor', '--dir', dir]);
    expect(verify.findings[0]!.message).toBe('/last_activity Invalid ISO datetime');
  });

  it("a plan that resumes past a refused file carries the file's first failing field (plan.skipped[].issue), also in resume's output", async () => {
    const dir = tempDir();
    const storage = fsStorage({ layout: 'files', dir });
    const writer = createWriter({ storage, runId: 'run-1', coalesceWindowMs: 0 });
    for (let i = 0; i < 2; i++) await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
    await writer.close();
    const latest = JSON.parse(readFileSync(join(dir, 'checkpoints/run-1/latest.json'), 'utf8'));
    writeFileSync(join(dir, 'checkpoints/run-1/latest.json'), JSON.stringify({ ...latest, status: 'napping' }));
    const plan = await planResume({ storage, profile: defaultProfile, runId: 'run-1' });
    await storage.close();
    expect(plan.skipped).toHaveLength(1);
    expect(plan.skipped[0]!.reasonCode).toBe('checkpoint_schema_invalid');
    expect(plan.skipped[0]!.issue).toMatch(/^\/status /);
    const text = await runCliCaptured(['resume', 'run-1', '--dir', dir]);
    expect(text.out).toContain(`checkpoints/run-1/latest.json: ${plan.skipped[0]!.issue} [checkpoint_schema_invalid]`);
    const verify = await verifyJson(['run-1', '--dir', dir]);
    expect(verify.findings.find((f) => f.key === 'checkpoints/run-1/latest.json')!.message).toBe(plan.skipped[0]!.issue);
  });
});
