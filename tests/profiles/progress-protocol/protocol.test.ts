import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { utf8Encode as utf8EncodeForTest } from '../../../src/codec/utf8.js';
import {
  CONTINUATION_BOX,
  formatCompletionReport,
  linearStatusSink,
  parseProgress,
  progressProtocol,
  runCheckpointProtocol,
  type CheckpointProtocolOptions,
} from 'savepoint/progress-protocol';
import { LINEAR_KEY, git, installPreCommitHook, read, startFakeLinear, statusOf, tempRepo, write, type FakeTracker } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function setup(): Promise<{ dir: string; server: FakeTracker }> {
  const repo = tempRepo({
    'src/scoring.ts': 'export {}\n',
    'src/menu.ts': 'export {}\n',
    '.gitignore': '.ccc-progress.md\n.ccc-state.json\n',
  });
  const server = await startFakeLinear();
  cleanups.push(repo.cleanup, () => server.close());
  write(repo.dir, '.ccc-state.json', JSON.stringify({ activeTaskFiles: ['src/scoring.ts'], executionMode: 'tdd' }, null, 2));
  return { dir: repo.dir, server };
}

const progress = {
  issue: { id: 'CIA-123', title: 'Scoring' },
  executionMode: 'tdd',
  completedTasks: ['Timer'],
  currentTask: { description: 'Combo multiplier', status: 'tests red' },
  remainingTasks: ['Leaderboard'],
  decisions: [{ decision: 'Cap combos at 8x', rationale: 'keeps scores comparable' }],
  blockers: [],
};

function options(dir: string, server: FakeTracker, extra: Partial<CheckpointProtocolOptions> = {}): CheckpointProtocolOptions {
  return {
    cwd: dir,
    progress,
    sink: linearStatusSink({ issueId: 'CIA-123', apiKey: LINEAR_KEY, endpoint: `${server.url}/graphql` }),
    clock: { now: () => Date.UTC(2025, 11, 14, 15, 30) },
    ...extra,
  };
}

describe('the manual profile: all four steps', () => {
  it('4/4: progress persisted, in-scope commit, comment created, continuation prompt in the box', async () => {
    const { dir, server } = await setup();
    write(dir, 'src/scoring.ts', 'export const combo = 8;\n');
    write(dir, 'src/menu.ts', 'export const menu = 1;\n'); // out of scope
    const printed: string[] = [];
    const report = await runCheckpointProtocol(options(dir, server, { log: (t) => printed.push(t) }));

    expect(report.summary).toBe('Checkpoint complete: 4/4 steps succeeded.');
    expect(report.steps.map((s) => [s.name, s.outcome])).toEqual([
      ['Persist progress', 'succeeded'],
      ['Git snapshot', 'succeeded'],
      ['Linear update', 'succeeded'],
      ['Continuation prompt', 'succeeded'],
    ]);
    // Step 1: the file, in the spec layout, readable as a progressProtocol snapshot
    const text = read(dir, '.ccc-progress.md');
    const parsed = parseProgress(text).document;
    expect(parsed).toMatchObject({ ...progress, session: '2025-12-14T15:30:00.000Z' });
    expect(parsed.continuationPrompt).toBe(
      'Resume CIA-123. Current task: task 2 of 3 — Combo multiplier. Key files: src/scoring.ts.\nNext action: Continue Combo multiplier (tests red).',
    );
    const snapshot = await progressProtocol.document.decode(utf8EncodeForTest(text), '.ccc-progress.md');
    expect(snapshot).toMatchObject({ runId: 'CIA-123', sequence: 1, source: 'handoff_request', status: 'in_progress' });
    // Step 2: only the in-scope file was committed
    expect(git(dir, 'show', '--name-only', '--format=%s', 'HEAD').trim()).toBe(
      'checkpoint(CIA-123): task 2 of 3 — Combo multiplier\n\nsrc/scoring.ts',
    );
    expect(statusOf(dir)).toEqual({ 'src/menu.ts': ' M' });
    // Step 3: one comment
    expect(server.comments.size).toBe(1);
    // Step 4: the box, exactly
    expect(report.steps[3]!.message).toBe(
      [
        '╔══════════════════════════════════════════════════╗',
        '║  CONTINUATION PROMPT                             ║',
        '╚══════════════════════════════════════════════════╝',
        '',
        parsed.continuationPrompt,
        '',
        "Copy this prompt into your next session's first message.",
      ].join('\n'),
    );
    expect(report.continuationPrompt).toBe(parsed.continuationPrompt);
    // everything printed, in order, ending with the completion report
    expect(printed.join('\n')).toBe(report.output);
    expect(report.output.endsWith('Checkpoint complete: 4/4 steps succeeded.')).toBe(true);
    expect(report.output.indexOf('Progress saved')).toBeLessThan(report.output.indexOf('Git snapshot: committed'));
  });

  it('a clean tree counts as a success with the skip message', async () => {
    const { dir, server } = await setup();
    const report = await runCheckpointProtocol(options(dir, server));
    expect(report.steps[1]).toMatchObject({ outcome: 'skipped', message: 'Git snapshot skipped — working tree clean.' });
    expect(report.summary).toBe('Checkpoint complete: 4/4 steps succeeded.');
  });

  it('3/4 with the exact failure line when Linear answers 503; the other steps still run', async () => {
    const { dir, server } = await setup();
    server.fail({ status: 503 });
    const report = await runCheckpointProtocol(options(dir, server));
    expect(report.summary).toBe(
      'Checkpoint complete: 3/4 steps succeeded.\nFailed: Linear update (HTTP 503) — status not persisted to issue tracker.',
    );
    expect(report.steps[3]!.outcome).toBe('succeeded');
    expect(report.output).toContain('Warning: Linear update skipped (HTTP 503).');
  });

  it('a failing pre-commit hook is a skip with a message, not a failure', async () => {
    const { dir, server } = await setup();
    installPreCommitHook(dir, 'exit 1');
    write(dir, 'src/scoring.ts', 'changed\n');
    const report = await runCheckpointProtocol(options(dir, server));
    expect(report.steps[1]).toMatchObject({ outcome: 'skipped', message: 'Git snapshot skipped — pre-commit hook failed.' });
    expect(report.summary).toBe('Checkpoint complete: 4/4 steps succeeded.');
    expect(statusOf(dir)).toEqual({ 'src/scoring.ts': ' M' });
  });

  it('updates .ccc-progress.md in place: one file, the sequence advances, unspecified fields kept', async () => {
    const { dir, server } = await setup();
    await runCheckpointProtocol(options(dir, server));
    const second = await runCheckpointProtocol(
      options(dir, server, {
        progress: {
          completedTasks: ['Timer', 'Combo multiplier'],
          currentTask: { description: 'Leaderboard', status: 'starting' },
          remainingTasks: [],
        },
        clock: { now: () => Date.UTC(2025, 11, 14, 16, 0) },
      }),
    );
    expect(second.summary).toBe('Checkpoint complete: 4/4 steps succeeded.');
    const text = read(dir, '.ccc-progress.md');
    const doc = parseProgress(text).document;
    expect(doc.issue).toEqual(progress.issue); // kept from the file
    expect(doc.decisions).toEqual(progress.decisions);
    expect(doc.currentTask).toEqual({ description: 'Leaderboard', status: 'starting' });
    expect(doc.continuationPrompt).toMatch(/task 3 of 3 — Leaderboard/);
    expect((await progressProtocol.document.decode(utf8EncodeForTest(text), 'x')).sequence).toBe(2);
    expect(readdirSync(dir).filter((f) => f.includes('progress'))).toEqual(['.ccc-progress.md']); // no new file per checkpoint
    expect(server.comments.size).toBe(1);
  });

  it('an unreadable progress file: warnings, the generic template in the box, and every failure reported', async () => {
    const { dir, server } = await setup();
    mkdirSync(join(dir, 'blocked-path'));
    const report = await runCheckpointProtocol(options(dir, server, { progressFile: 'blocked-path' }));
    expect(report.summary).toBe(
      [
        'Checkpoint complete: 2/4 steps succeeded.',
        'Failed: Persist progress (could not write blocked-path: EISDIR) — session state not saved to .ccc-progress.md.',
        'Failed: Continuation prompt (blocked-path unreadable: EISDIR) — generic template printed instead.',
      ].join('\n'),
    );
    expect(report.steps[3]!.message).toContain(
      `${CONTINUATION_BOX}\n\nResume CIA-123. Current task: [task N of M]. Key files: [file list].\nNext action: [specific next step].`,
    );
    expect(report.output).toMatch(/Warning: could not read the continuation prompt/);
  });

  it('a progress file without a Continuation Prompt, hand-edited after step 1, gets the generic template', async () => {
    const { dir } = await setup();
    const report = await runCheckpointProtocol({
      cwd: dir,
      progress,
      clock: { now: () => 0 },
      progressFile: 'p.md',
      log: (t) => {
        if (t.startsWith('Progress saved')) writeFileSync(join(dir, 'p.md'), '# Session Progress\n\n**Issue:** CIA-123\n');
      },
    });
    expect(report.steps[3]).toMatchObject({ outcome: 'failed', cause: 'no Continuation Prompt section' });
    expect(report.steps[2]).toMatchObject({ outcome: 'skipped', message: 'Tracker update skipped — no tracker configured.' });
  });

  it('no issue and no existing file: step 1 fails, the rest still runs', async () => {
    const { dir, server } = await setup();
    const report = await runCheckpointProtocol(options(dir, server, { progress: {} }));
    expect(report.steps[0]).toMatchObject({ outcome: 'failed', cause: 'no issue given and no readable .ccc-progress.md' });
    expect(report.steps[1]!.outcome).not.toBe('not_run');
    expect(report.summary.split('\n')[0]).toBe('Checkpoint complete: 1/4 steps succeeded.');
  });
});

describe('the automated profile: steps 1 and 3 only', () => {
  it('never touches git and prints no box', async () => {
    const { dir, server } = await setup();
    write(dir, 'src/scoring.ts', 'changed\n');
    const report = await runCheckpointProtocol(options(dir, server, { profile: 'automated' }));
    expect(report.summary).toBe('Checkpoint complete: 2/2 steps succeeded.');
    expect(report.steps.map((s) => s.outcome)).toEqual(['succeeded', 'not_run', 'succeeded', 'not_run']);
    expect(statusOf(dir)).toEqual({ 'src/scoring.ts': ' M' });
    expect(report.output).not.toContain('CONTINUATION PROMPT');
    expect((await progressProtocol.document.decode(utf8EncodeForTest(read(dir, '.ccc-progress.md')), 'x')).source).toBe('gate_boundary');
  });
});

describe('never suppress partial success', () => {
  it('every combination of step 1 and step 3 outcomes is counted and each failure listed (automated profile)', async () => {
    const { dir, server } = await setup();
    mkdirSync(join(dir, 'a-directory'));
    for (const step1Fails of [false, true]) {
      for (const tracker of ['ok', '503', '401', 'none'] as const) {
        if (tracker === '503') server.fail({ status: 503 });
        const sink =
          tracker === 'none'
            ? undefined
            : linearStatusSink({
                issueId: 'CIA-123',
                apiKey: tracker === '401' ? 'lin_api_bad' : LINEAR_KEY,
                endpoint: `${server.url}/graphql`,
              });
        const report = await runCheckpointProtocol({
          cwd: dir,
          profile: 'automated',
          progress,
          ...(sink ? { sink } : {}),
          ...(step1Fails ? { progressFile: 'a-directory' } : {}),
        });
        const failed = [...(step1Fails ? ['Persist progress'] : []), ...(tracker === '503' || tracker === '401' ? ['Linear update'] : [])];
        const lines = report.summary.split('\n');
        expect(lines[0]).toBe(`Checkpoint complete: ${2 - failed.length}/2 steps succeeded.`);
        expect(lines.slice(1).map((l) => /^Failed: (.+?) \(/.exec(l)?.[1])).toEqual(failed);
        expect(report.succeeded).toBe(2 - failed.length);
        expect(report.output.endsWith(report.summary)).toBe(true);
      }
    }
  });
});

describe('formatCompletionReport', () => {
  it('counts skips as successes and lists each failure', () => {
    expect(
      formatCompletionReport([
        { step: 1, name: 'Persist progress', outcome: 'succeeded' },
        { step: 2, name: 'Git snapshot', outcome: 'skipped' },
        { step: 3, name: 'Linear update', outcome: 'failed', cause: 'HTTP 503', consequence: 'status not persisted to issue tracker.' },
        { step: 4, name: 'Continuation prompt', outcome: 'succeeded' },
      ]),
    ).toBe('Checkpoint complete: 3/4 steps succeeded.\nFailed: Linear update (HTTP 503) — status not persisted to issue tracker.');
  });
});
