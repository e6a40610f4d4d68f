import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, findIncompleteRuns, memoryStorage, planResume } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { fsStorage } from 'savepoint/fs';
import {
  importProgressProtocolDocument,
  importProgressProtocolRun,
  parseProgress,
  progressProtocol,
  progressProtocolProfile,
  renderProgress,
  runCheckpointProtocol,
  type ProgressDocument,
} from 'savepoint/progress-protocol';
import { runCli } from '../../../src/cli/run.js';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { captureIo } from '../../support/cli-io.js';
import { progressDocument } from './arbitraries.js';
import { foreignFixture, putFixtures, readWarningCodes, storedText, tempDirs } from '../../support/foreign.js';

const clock = manualClock('2026-01-15T15:00:00Z');
const RUN = 'CIA-123';
const FILE = `progress/${RUN}/.ccc-progress.md`;
const codes = readWarningCodes;
const text = storedText;

const tempDir = tempDirs('savepoint-progress-foreign-');

describe('a .ccc-progress.md the protocol tool wrote resumes (progress-protocol.md read by its own rules)', () => {
  it("the spec's Step 1 template verbatim: unsealed, blocked by its blocker, its continuation prompt as written", async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'progress-protocol', { [FILE]: 'ccc-progress.spec-template.md' });
    const plan = await planResume({ storage, profile: progressProtocol, runId: RUN, clock });
    expect(codes(plan)).toEqual(['checkpoint_unsealed']);
    expect(plan.snapshot).toMatchObject({
      runId: RUN,
      sequence: 1,
      source: 'handoff_request',
      status: 'blocked',
      createdAt: '1970-01-01T00:00:00Z',
    });
    expect(plan.continuationPrompt).toBe(
      'Resume CIA-XXX. Current task: [task N of M]. Key files: [file list].\nNext action: [specific next step].',
    );
    expect(plan).toMatchObject({ reason: 'blocked', eligible: false });
    expect((await findIncompleteRuns({ storage, profile: progressProtocol })).map((r) => [r.runId, r.status, r.readWarnings])).toEqual([
      [RUN, 'blocked', ['checkpoint_unsealed']],
    ]);
  });

  it('a real tool file: an offset and fractions, a Branch line, sections in another order, ## Decisions, an extra section, CRLF', async () => {
    for (const fixture of ['ccc-progress.tool.md', 'ccc-progress.tool.crlf.md']) {
      const storage = memoryStorage();
      await putFixtures(storage, 'progress-protocol', { [FILE]: fixture });
      const plan = await planResume({ storage, profile: progressProtocol, runId: RUN, clock });
      expect(codes(plan)).toEqual(['checkpoint_unsealed']);
      expect(plan.snapshot).toMatchObject({ status: 'in_progress', createdAt: '2026-01-15T14:30:00.500Z' });
      expect(plan).toMatchObject({ at: 'Tracker status upsert', reason: 'continue_current_task', eligible: true });
      expect(plan.payload.completedTasks).toEqual(['Write the progress file codec', 'Add the git snapshot step']);
      expect(plan.payload.decisions).toEqual([{ decision: 'Upsert one comment', rationale: 'avoids a notification on every checkpoint' }]);
      expect(plan.payload.extraSections?.map((s) => s.heading)).toEqual(['Gate Log']);
    }
  });
});

describe('a stale seal: .ccc-progress.md the tool changed after savepoint sealed it', () => {
  it("is the newest truth: checkpoint_integrity_mismatch, savepoint's sequence and trigger kept, the tool's task resumed", async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'progress-protocol', { [FILE]: 'ccc-progress.stale-seal.md' });
    const plan = await planResume({ storage, profile: progressProtocol, runId: RUN, clock });
    expect(codes(plan)).toEqual(['checkpoint_integrity_mismatch']);
    expect(plan.snapshot).toMatchObject({ sequence: 5, source: 'gate_boundary' });
    expect(plan.payload.remainingTasks).toEqual(['Continuation prompt box', 'Stop hook entry', 'Docs (added by the tool)']);
  });
});

describe('the tool writes → savepoint resumes and writes → the tool rewrites → savepoint resumes', () => {
  it('end to end in a project directory: the Branch line, the note and the Gate Log survive byte for byte; every rewrite resumes', async () => {
    const dir = tempDir();
    const path = join(dir, '.ccc-progress.md');
    const profile = progressProtocolProfile({ projectRunId: RUN });
    writeFileSync(path, foreignFixture('progress-protocol', 'ccc-progress.tool.md'));
    const storage = fsStorage({ dir });
    const plan = await planResume({ storage, profile, runId: RUN, clock });
    const { extraSections: _theirs, ...mine } = plan.payload;
    const writer = createWriter({ storage, profile, runId: RUN, clock });
    const next: ProgressDocument = {
      ...mine,
      completedTasks: [...mine.completedTasks, 'Tracker status upsert'],
      currentTask: { description: 'Continuation prompt box', status: 'started' },
      remainingTasks: ['Stop hook entry'],
    };
    expect(await writer.checkpoint({ source: 'gate_boundary', status: 'in_progress', payload: next })).toMatchObject({
      ok: true,
      sequence: 2,
    });
    await writer.close();
    const stored = readFileSync(path, 'utf8');
    for (const theirs of [
      '**Branch:** feat/cia-123-checkpoints',
      '_Written by /ccc:checkpoint (stop hook, gate 2)._',
      '## Gate Log\n| gate | result |\n|------|--------|\n| 1 | passed |\n| 2 | passed |',
    ])
      expect(stored).toContain(theirs);
    const again = await planResume({ storage, profile, runId: RUN, clock });
    expect(codes(again)).toEqual([]);
    expect(again).toMatchObject({ at: 'Continuation prompt box', snapshot: { sequence: 2 } });

    // regression: the tool rewrites its single file its own way (no savepoint comment) — savepoint still resumes it
    const rewritten = stored
      .split('\n')
      .filter((l) => !l.startsWith('<!-- savepoint:'))
      .join('\n')
      .replace('- Continuation prompt box — started', '- Continuation prompt box — box drawn, footer missing');
    writeFileSync(path, rewritten);
    const resumed = await planResume({ storage, profile, runId: RUN, clock });
    expect(codes(resumed)).toEqual(['checkpoint_unsealed']);
    expect(resumed.payload.currentTask).toEqual({ description: 'Continuation prompt box', status: 'box drawn, footer missing' });

    // the tool edits the file but leaves savepoint's comment in place: the edit is the newest truth
    const writer2 = createWriter({ storage, profile, runId: RUN, clock });
    expect(
      (await writer2.checkpoint({ source: 'gate_boundary', status: 'in_progress', payload: { ...resumed.payload, remainingTasks: [] } }))
        .ok,
    ).toBe(true);
    await writer2.close();
    writeFileSync(path, readFileSync(path, 'utf8').replace('## Remaining Tasks\n- None', '## Remaining Tasks\n- Docs'));
    const edited = await planResume({ storage, profile, runId: RUN, clock });
    expect(codes(edited)).toEqual(['checkpoint_integrity_mismatch']);
    expect(edited.payload.remainingTasks).toEqual(['Docs']);
    expect(readFileSync(path, 'utf8')).toContain('**Branch:** feat/cia-123-checkpoints');
    await storage.close();
  });

  it("savepoint's own Step 1 (runCheckpointProtocol) keeps the tool's Branch line, note and extra section too", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.ccc-progress.md'), foreignFixture('progress-protocol', 'ccc-progress.tool.crlf.md'));
    const report = await runCheckpointProtocol({ cwd: dir, profile: 'automated', progress: { remainingTasks: ['Stop hook entry'] } });
    expect(report.steps[0]).toMatchObject({ outcome: 'succeeded' });
    const after = readFileSync(join(dir, '.ccc-progress.md'), 'utf8');
    for (const theirs of [
      '**Branch:** feat/cia-123-checkpoints',
      '_Written by /ccc:checkpoint (stop hook, gate 2)._',
      '## Gate Log\n| gate | result |',
    ])
      expect(after).toContain(theirs);
    expect(after.match(/## Gate Log/g)).toHaveLength(1);
    expect(parseProgress(after).document.remainingTasks).toEqual(['Stop hook entry']);
  });

  it('property: any spec-valid foreign progress file resumes, and its extra lines and sections survive a savepoint rewrite byte for byte', async () => {
    const note = fc.stringMatching(/^[A-Za-z][A-Za-z0-9 .,:-]{0,30}$/);
    await fc.assert(
      fc.asyncProperty(
        progressDocument,
        fc.array(note, { maxLength: 2 }),
        fc.option(fc.array(note, { minLength: 1, maxLength: 3 }), { nil: undefined }),
        async (doc, lines, notes) => {
          const { extraSections: _e, ...spec } = doc;
          const base = renderProgress(spec);
          const extraLines = lines.map((l) => `**${l.split(' ')[0]!.replace(/:/g, '')}x:** ${l}`);
          const section = notes ? `## Tool Notes\n${notes.map((n) => `- ${n}`).join('\n')}` : undefined;
          const foreign = `${base.replace(/(\*\*Execution Mode:\*\*.*\n)/, `$1${extraLines.map((l) => `${l}\n`).join('')}`)}${section ? `\n${section}\n` : ''}`;
          const storage = memoryStorage();
          await storage.put(FILE, utf8Encode(foreign));
          const plan = await planResume({ storage, profile: progressProtocol, runId: RUN, clock });
          expect(codes(plan)).toEqual(['checkpoint_unsealed']);
          expect(plan.continuationPrompt).toBe(parseProgress(base).document.continuationPrompt);
          const writer = createWriter({ storage, profile: progressProtocol, runId: RUN, clock });
          expect((await writer.checkpoint({ source: 'session_split', status: 'in_progress', payload: spec })).ok).toBe(true);
          await writer.close();
          const stored = await text(storage, FILE);
          for (const l of extraLines) expect(stored).toContain(`\n${l}\n`);
          if (section) expect(stored).toContain(section);
          expect(codes(await planResume({ storage, profile: progressProtocol, runId: RUN, clock }))).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('import of progress runs', () => {
  it('dry run by default, seals in place with --apply keeping every line, idempotent; `savepoint import` copies', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'progress-protocol', { [FILE]: 'ccc-progress.tool.md' });
    expect(await importProgressProtocolRun(storage, RUN)).toMatchObject({ applied: false, changes: 1 });
    expect(await text(storage, FILE)).toBe(foreignFixture('progress-protocol', 'ccc-progress.tool.md'));
    expect((await importProgressProtocolRun(storage, RUN, { apply: true })).files).toEqual([
      expect.objectContaining({ key: FILE, action: 'seal', warnings: ['checkpoint_unsealed'] }),
    ]);
    const sealed = await text(storage, FILE);
    expect(
      sealed
        .split('\n')
        .filter((l) => !l.startsWith('<!-- savepoint:'))
        .join('\n'),
    ).toBe(foreignFixture('progress-protocol', 'ccc-progress.tool.md'));
    expect(await progressProtocol.document.decode(utf8Encode(sealed), FILE)).toMatchObject({
      runId: RUN,
      sequence: 1,
      createdAt: '2026-01-15T14:30:00.500Z',
    });
    expect((await importProgressProtocolRun(storage, RUN, { apply: true })).changes).toBe(0);
    expect(codes(await planResume({ storage, profile: progressProtocol, runId: RUN, clock }))).toEqual([]);

    const { snapshot } = await importProgressProtocolDocument(foreignFixture('progress-protocol', 'ccc-progress.spec-template.md'), {
      runId: RUN,
      sequence: 4,
      source: 'gate_boundary',
    });
    expect(snapshot).toMatchObject({ runId: RUN, sequence: 4, source: 'gate_boundary', status: 'blocked' });

    const from = tempDir();
    const to = tempDir();
    const source = fsStorage({ dir: from });
    await putFixtures(source, 'progress-protocol', { [FILE]: 'ccc-progress.spec-template.md' });
    await source.close();
    for (const expected of [1, 0]) {
      const io = captureIo();
      expect(await runCli(['import', '--profile', 'progressProtocol', '--dir', from, '--to-dir', to, '--apply', '--json'], io)).toBe(0);
      expect((JSON.parse(io.out) as { changes: number }).changes).toBe(expected);
    }
    const target = fsStorage({ dir: to });
    expect(codes(await planResume({ storage: target, profile: progressProtocol, runId: RUN, clock }))).toEqual([]);
    await target.close();
  });
});
