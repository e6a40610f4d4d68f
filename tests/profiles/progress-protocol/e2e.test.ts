import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriter, listAll, memoryStorage, planResume } from 'savepoint';
import { utf8Decode } from '../../../src/codec/utf8.js';
import { fsStorage } from 'savepoint/fs';
import {
  githubIssueCommentSink,
  parseProgress,
  progressProtocol,
  progressProtocolProfile,
  readContinuationPrompt,
  runCheckpointProtocol,
  type ProgressDocument,
} from 'savepoint/progress-protocol';
import { GITHUB_TOKEN, git, read, startFakeGitHub, statusOf, tempRepo, write, type FakeTracker } from './helpers.js';

const example = parseProgress(readFileSync(new URL('../../fixtures/progress/ccc-progress.md', import.meta.url), 'utf8')).document;
let t = Date.UTC(2025, 11, 14, 15, 30);
const clock = {
  now: () => t,
  setTimeout: (cb: () => void, ms: number) => setTimeout(cb, ms),
  clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout),
};

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

describe('progressProtocol end to end: writer → storage → planResume', () => {
  it('one artifact per run, updated in place; a session-only change coalesces; resume reads the Continuation Prompt', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: progressProtocol, runId: 'CIA-123', clock });
    const unblocked: ProgressDocument = { ...example, blockers: [] };
    expect(await writer.checkpoint({ source: 'handoff_request', status: 'in_progress', payload: unblocked })).toMatchObject({
      ok: true,
      outcome: 'written',
      sequence: 1,
      key: 'progress/CIA-123/.ccc-progress.md',
    });
    t += 1000;
    expect(
      await writer.checkpoint({
        source: 'context_threshold',
        status: 'in_progress',
        payload: { ...unblocked, session: '2025-12-14T15:30:01Z' },
      }),
    ).toMatchObject({ ok: true, outcome: 'coalesced' });
    t += 10_000;
    const next: ProgressDocument = {
      ...unblocked,
      completedTasks: [...unblocked.completedTasks, 'Tracker status upsert'],
      currentTask: { description: 'Continuation prompt box', status: 'starting' },
      remainingTasks: ['Stop hook entry'],
      continuationPrompt:
        'Resume CIA-123. Current task: task 4 of 5 — Continuation prompt box. Key files: src/continuation.ts.\nNext action: draw the box.',
    };
    expect(await writer.checkpoint({ source: 'gate_boundary', status: 'in_progress', payload: next })).toMatchObject({
      ok: true,
      outcome: 'written',
      sequence: 2,
    });
    await writer.close();

    const files = (await listAll(storage, 'progress/')).map((e) => e.key).filter((k) => !k.endsWith('.json'));
    expect(files).toEqual(['progress/CIA-123/.ccc-progress.md']); // no new file per checkpoint
    const text = utf8Decode((await storage.get('progress/CIA-123/.ccc-progress.md'))!.bytes);
    expect(parseProgress(text).document).toEqual(next);
    expect(readContinuationPrompt(text)).toBe(next.continuationPrompt);

    const plan = await planResume({ storage, profile: progressProtocol, runId: 'CIA-123', clock });
    expect(plan).toMatchObject({
      at: 'Continuation prompt box',
      reason: 'continue_current_task',
      eligible: true,
      continuationPrompt: next.continuationPrompt,
    });
    expect(plan.snapshot.sequence).toBe(2);
    expect(plan.completed).toEqual(['Write the progress file codec', 'Add the git snapshot step', 'Tracker status upsert']);
  });

  it('the file the protocol writes in a project is the file the profile resumes (fsStorage rooted at the project)', async () => {
    const repo = tempRepo({ 'src/github.ts': 'export {}\n' });
    const server: FakeTracker = await startFakeGitHub('acme', 'app');
    cleanups.push(repo.cleanup, () => server.close());
    write(repo.dir, '.ccc-state.json', JSON.stringify({ activeTaskFiles: ['src/github.ts'] }));
    write(repo.dir, 'src/github.ts', 'export const sink = 1;\n');

    const report = await runCheckpointProtocol({
      cwd: repo.dir,
      progress: { ...example, blockers: [] },
      sink: githubIssueCommentSink({ owner: 'acme', repo: 'app', issueNumber: 7, token: GITHUB_TOKEN, baseUrl: server.url }),
      clock,
    });
    expect(report.summary).toBe('Checkpoint complete: 4/4 steps succeeded.');
    expect(git(repo.dir, 'show', '--name-only', '--format=', 'HEAD').trim()).toBe('src/github.ts');
    expect(statusOf(repo.dir)).toEqual({ '.ccc-progress.md': '??', '.ccc-state.json': '??' });

    const storage = fsStorage({ dir: repo.dir });
    cleanups.push(() => storage.close());
    const profile = progressProtocolProfile({ projectRunId: 'CIA-123' });
    const plan = await planResume({ storage, profile, runId: 'CIA-123', clock });
    expect(plan.continuationPrompt).toBe(report.continuationPrompt);
    expect(plan.payload.currentTask).toEqual(example.currentTask);
    expect(plan.snapshot).toMatchObject({ runId: 'CIA-123', sequence: 1, source: 'handoff_request' });

    // …and a savepoint writer continuing the run updates the same file, which the protocol then refreshes again
    const writer = createWriter({ storage, profile, runId: 'CIA-123', clock });
    t += 60_000;
    const r = await writer.checkpoint({
      source: 'session_split',
      status: 'resuming',
      payload: { ...plan.payload, currentTask: { description: 'Tracker status upsert', status: 'resumed' } },
    });
    expect(r).toMatchObject({ ok: true, sequence: 2, key: '.ccc-progress.md' });
    await writer.close();
    expect(parseProgress(read(repo.dir, '.ccc-progress.md')).document.currentTask).toEqual({
      description: 'Tracker status upsert',
      status: 'resumed',
    });
    const again = await runCheckpointProtocol({ cwd: repo.dir, profile: 'automated', clock });
    expect(again.summary).toBe('Checkpoint complete: 2/2 steps succeeded.');
    expect((await planResume({ storage, profile, runId: 'CIA-123', clock })).snapshot.sequence).toBe(3);
    // The directory itself: the journal applies acknowledged writes (the run lock's delete at
    // close) to the files in the background, so wait for them before looking.
    await storage.flush?.();
    expect(readdirSync(repo.dir).filter((f) => f.startsWith('.ccc-progress'))).toEqual(['.ccc-progress.md']);
  });
});
