/**
 * progress-protocol.md: `.ccc-state.json` provides `checkpointCommentId` and `activeTaskFiles`
 * for Steps 2 and 3. Editors leave a UTF-8 byte order mark, and people write comments: the file
 * is read liberally, so neither skips Step 2 nor fails Step 3.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { linearStatusSink, readStateFile, runCheckpointProtocol, updateStateFile } from 'savepoint/progress-protocol';
import { LINEAR_KEY, read, startFakeLinear, statusOf, tempRepo, write } from './helpers.js';
import { join } from 'node:path';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

const JSONC = `\uFEFF{
  // the files of the task in hand
  "activeTaskFiles": ["src/scoring.ts",], /* trailing comma too */
  "url": "http://example.invalid/a//b", // a // inside a string stays
  "executionMode": "tdd"
}
`;

describe('.ccc-state.json with a byte order mark and comments', () => {
  it('readStateFile reads it; updateStateFile keeps the fields and the byte order mark (regression)', async () => {
    const repo = tempRepo();
    cleanups.push(repo.cleanup);
    write(repo.dir, '.ccc-state.json', JSONC);
    const path = join(repo.dir, '.ccc-state.json');
    expect(await readStateFile(path)).toEqual({
      activeTaskFiles: ['src/scoring.ts'],
      url: 'http://example.invalid/a//b',
      executionMode: 'tdd',
    });
    await updateStateFile(path, { checkpointCommentId: 'c-1' });
    const text = read(repo.dir, '.ccc-state.json');
    expect(text.charCodeAt(0)).toBe(0xfeff);
    expect(JSON.parse(text.slice(1))).toMatchObject({ activeTaskFiles: ['src/scoring.ts'], checkpointCommentId: 'c-1' });
  });

  it('the manual profile runs Step 2 on activeTaskFiles and Step 3 succeeds (regression)', async () => {
    const repo = tempRepo({ 'src/scoring.ts': 'export {}\n', '.gitignore': '.ccc-progress.md\n.ccc-state.json\n' });
    const server = await startFakeLinear();
    cleanups.push(repo.cleanup, () => server.close());
    write(repo.dir, '.ccc-state.json', JSONC);
    write(repo.dir, 'src/scoring.ts', 'export const combo = 8;\n');
    const report = await runCheckpointProtocol({
      cwd: repo.dir,
      progress: {
        issue: { id: 'CIA-123', title: 'Scoring' },
        executionMode: 'tdd',
        completedTasks: [],
        currentTask: { description: 'Combo', status: 'red' },
        remainingTasks: [],
        decisions: [],
        blockers: [],
      },
      sink: linearStatusSink({ issueId: 'CIA-123', apiKey: LINEAR_KEY, endpoint: `${server.url}/graphql` }),
      clock: { now: () => Date.UTC(2025, 11, 14, 15, 30) },
      log: () => undefined,
    });
    expect(report.steps.map((s) => [s.name, s.outcome])).toEqual([
      ['Persist progress', 'succeeded'],
      ['Git snapshot', 'succeeded'],
      ['Linear update', 'succeeded'],
      ['Continuation prompt', 'succeeded'],
    ]);
    expect(statusOf(repo.dir)['src/scoring.ts']).toBeUndefined(); // committed
  });
});
