/**
 * plan-executor.md: other executors rewrite `NN-CHECKPOINT.json` after every task, from their
 * own model — without savepoint's `integrity`. savepoint's next checkpoint must not take a
 * number the run already used: the rewritten file counts as the checkpoints its progress shows
 * (start, one per completed task), so the next write comes after them.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, parseJson, type JsonObject } from 'savepoint';
import { createPlanExecutorProfile, planExecutorTriggers } from 'savepoint/plan-executor';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';

const TASKS = ['Task 1: Setup', 'Task 2: Models', 'Task 3: Routes', 'Task 4: Tests'];

/** savepoint writes the start and two tasks; an executor rewrites the file without integrity; savepoint writes task 3. */
async function afterRewrite(history: boolean): Promise<{ before: number[]; next: number }> {
  const storage = memoryStorage();
  const profile = createPlanExecutorProfile({ history });
  const w1 = createWriter({ storage, profile, runId: '02', heartbeatIntervalMs: false });
  let req = planExecutorTriggers.start('02', TASKS);
  const before: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await w1.checkpoint(req);
    if (!r.ok) throw r.error;
    before.push(r.sequence);
    req = planExecutorTriggers.taskCompleted(req.payload, { commit: `abc12${i}` });
  }
  await w1.close();
  const key = profile.layout.latestKey('02');
  const { integrity: _dropped, ...rewritten } = parseJson(utf8Decode((await storage.get(key))!.bytes)) as JsonObject;
  await storage.put(key, utf8Encode(JSON.stringify({ ...rewritten, last_activity: '2026-12-01T00:00:00Z' }, null, 2)));
  const w2 = createWriter({ storage, profile, runId: '02', heartbeatIntervalMs: false });
  const r = await w2.checkpoint(req);
  await w2.close();
  if (!r.ok) throw r.error;
  return { before, next: r.sequence };
}

describe('planExecutor: numbering after an executor rewrote the checkpoint', () => {
  it('the spec single file: the next sequence comes after those already used (regression: the rewrite counted as 1, so 2 was reused)', async () => {
    const { before, next } = await afterRewrite(false);
    expect(before).toEqual([1, 2, 3]);
    expect(next).toBeGreaterThan(Math.max(...before));
  });

  it('with history: the rewrite is kept and the next sequence is new', async () => {
    const { before, next } = await afterRewrite(true);
    expect(next).toBeGreaterThan(Math.max(...before));
  });
});
