/**
 * handoff-markdown.md gives checkpoint ids only "e.g. `chk-001`, `session-abc-003`". A newer
 * hand-off another tool put in latest.md under an id without a number (`handoff-final`) is
 * the newest by content and time: resume takes it, and the writer keeps it as a history entry
 * before its own next latest.md replaces it, so the edit is never in no file.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, planResume, type Snapshot } from 'savepoint';
import { handoffMarkdown, parseHandoff, type HandoffPayload } from 'savepoint/handoff-markdown';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { listRunSnapshots } from '../../../src/runs/list-snapshots.js';
import { manualClock } from '../../support/clock.js';

const RUN = 'chromatic-quest';
const LATEST = `checkpoints/${RUN}/latest.md`;
const spec = readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8');

function payloadOf(text: string): HandoffPayload {
  const { checkpoint: _c, created: _d, frontMatter: _f, ...payload } = parseHandoff(text);
  return payload;
}

/** savepoint writes chk-001 and chk-002 (14:01, 14:02); another tool then writes latest.md as `handoff-final` at 15:00. */
async function runWithForeignLatest() {
  const storage = memoryStorage();
  const clock = manualClock();
  const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
  for (const n of [1, 2]) {
    await clock.advance(60_000);
    const payload = { ...payloadOf(spec), currentState: [`savepoint state ${n}`] };
    expect(await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload })).toMatchObject({
      ok: true,
      sequence: n,
    });
  }
  await writer.close();
  const foreign = spec
    .replace('checkpoint: chk-003', 'checkpoint: handoff-final')
    .replace('created: 2025-12-14T15:30:00Z', 'created: 2026-01-15T15:00:00Z')
    .replace('- Dev server running at localhost:5173', '- Dev server running at localhost:5173\n- Edited by the other tool');
  await storage.put(LATEST, utf8Encode(foreign));
  return { storage, clock };
}

describe('a newer hand-off in latest.md whose id has no number', () => {
  it('is what resume takes, numbered after the history (regression)', async () => {
    const { storage, clock } = await runWithForeignLatest();
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(plan.snapshot).toMatchObject({ id: 'handoff-final', sequence: 3 });
    expect(plan.payload.currentState).toContain('Edited by the other tool');
    expect(plan.source).toMatchObject({ origin: 'latest', latest: 'valid' });
    expect(plan.warnings.map((w) => w.code)).toContain('resume_latest_renumbered');
    expect(plan.warnings.map((w) => w.code)).not.toContain('resume_latest_stale');
    expect(plan.nextSequence).toBe(4);
  });

  it("is kept as a history entry before the writer's next latest.md replaces it (regression)", async () => {
    const { storage, clock } = await runWithForeignLatest();
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
    await clock.advance(3_600_000);
    const next = { ...plan.payload, currentState: ['after the hand-off'] };
    expect(await writer.checkpoint({ source: 'session_break', status: 'in_progress', payload: next })).toMatchObject({
      ok: true,
      sequence: 4,
    });
    await writer.close();
    const kept = utf8Decode((await storage.get(`checkpoints/${RUN}/chk-003.md`))!.bytes);
    expect(kept).toContain('Edited by the other tool');
    const history: Snapshot<HandoffPayload>[] = [];
    for await (const s of listRunSnapshots({ storage, profile: handoffMarkdown, runId: RUN })) history.push(s);
    expect(history.map((s) => s.sequence)).toEqual([4, 3, 2, 1]); // newest first
    expect(history[1]!.payload.currentState).toContain('Edited by the other tool');
    const again = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(again.snapshot).toMatchObject({ sequence: 4 });
    expect(again.warnings.map((w) => w.code)).not.toContain('resume_files_skipped');
  });

  it('a writer that opens twice keeps it once', async () => {
    const { storage, clock } = await runWithForeignLatest();
    for (const state of ['one', 'two']) {
      const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
      await clock.advance(3_600_000);
      const payload = { ...payloadOf(spec), currentState: [state] };
      expect((await writer.checkpoint({ source: 'session_break', status: 'in_progress', payload })).ok).toBe(true);
      await writer.close();
    }
    const keys: string[] = [];
    for await (const e of storage.list(`checkpoints/${RUN}/`)) keys.push(e.key);
    expect(keys.filter((k) => /chk-\d+\.md$/.test(k)).sort()).toEqual(
      ['001', '002', '003', '004', '005'].map((n) => `checkpoints/${RUN}/chk-${n}.md`),
    );
  });
});
