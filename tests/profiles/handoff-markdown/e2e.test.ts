import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriter, keepLast, listAll, memoryStorage, planResume, runRetention } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { fsStorage } from 'savepoint/fs';
import {
  compress,
  detectHandoffTriggers,
  estimateTokens,
  handoffMarkdown,
  handoffMarkdownProfile,
  nextCheckpoint,
  parseHandoff,
  renderHandoff,
  type HandoffDocument,
  type HandoffPayload,
} from 'savepoint/handoff-markdown';

const example = parseHandoff(readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8'));
const payloadOf = ({ checkpoint: _c, created: _d, frontMatter: _f, ...payload }: HandoffDocument): HandoffPayload => payload;

let t = Date.UTC(2025, 11, 14, 15, 30);
const clock = {
  now: () => t,
  setTimeout: (cb: () => void, ms: number) => setTimeout(cb, ms),
  clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout),
};

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

describe('handoffMarkdown end to end: writer → storage → planResume', () => {
  it('three checkpoints carried forward and compressed, stored as chk-NNN.md + latest.md, resumed at Next Actions', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'chromatic-quest', clock });

    const first = await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload: payloadOf(example) });
    expect(first).toMatchObject({
      ok: true,
      outcome: 'written',
      snapshotId: 'chk-001',
      sequence: 1,
      key: 'checkpoints/chromatic-quest/chk-001.md',
    });

    t += 60_000;
    const doc1: HandoffDocument = { ...example, checkpoint: 'chk-001' };
    const doc2 = nextCheckpoint(
      doc1,
      {
        decisions: ['Scoring: combo multiplier capped at 8x — comparable scores'],
        playByPlay: [{ phase: 'Phase 3', action: 'Implemented timer, scoring, combos', outcome: 'Complete' }],
        artifactTrail: [{ file: 'src/game/scoring.ts', status: 'created', keyChange: 'Combo scoring' }],
        currentState: ['Phases 1-3 complete'],
        nextActions: ['Phase 4: Offline mode', 'Blocked: None'],
      },
      { clock },
    );
    const [source2] = detectHandoffTriggers(doc1, doc2);
    expect(source2).toBe('phase_completion');
    const second = await writer.checkpoint({ source: source2!, status: 'in_progress', payload: payloadOf(doc2) });
    expect(second).toMatchObject({ ok: true, outcome: 'written', snapshotId: 'chk-002' });

    t += 60_000;
    const doc3 = nextCheckpoint(
      doc2,
      {
        currentState: ['Phases 1-3 complete', 'Offline spike started'],
        nextActions: ['Phase 4: cache generated images in IndexedDB', 'Blocked: None'],
      },
      { clock },
    );
    const budget = estimateTokens(renderHandoff(doc3)) - 40;
    const { document: compact, tokens } = compress(doc3, { maxTokens: budget });
    expect(tokens).toBeLessThanOrEqual(budget);
    const third = await writer.checkpoint({ source: 'pre_compression', status: 'paused', payload: payloadOf(compact) });
    expect(third).toMatchObject({ ok: true, outcome: 'written', snapshotId: 'chk-003', sequence: 3 });
    await writer.close();

    const keys = (await listAll(storage, 'checkpoints/chromatic-quest/')).map((e) => e.key);
    expect(keys.filter((k) => k.endsWith('.md'))).toEqual([
      'checkpoints/chromatic-quest/chk-001.md',
      'checkpoints/chromatic-quest/chk-002.md',
      'checkpoints/chromatic-quest/chk-003.md',
      'checkpoints/chromatic-quest/latest.md',
    ]);
    const latestText = utf8Decode((await storage.get('checkpoints/chromatic-quest/latest.md'))!.bytes);
    expect(latestText).toBe(utf8Decode((await storage.get('checkpoints/chromatic-quest/chk-003.md'))!.bytes));
    // every stored file is a hand-off document a reader of the spec can use
    const asSpec = parseHandoff(latestText);
    expect(asSpec).toMatchObject({ checkpoint: 'chk-003', nextActions: ['Phase 4: cache generated images in IndexedDB', 'Blocked: None'] });
    expect(asSpec.frontMatter).toEqual({ savepoint: expect.stringMatching(/^1\.0 3 pre_compression paused [A-Za-z0-9_-]{43}$/) });
    // the stored file, savepoint's seal line included, fits the budget given to compress()
    expect(estimateTokens(latestText)).toBeLessThanOrEqual(budget);
    expect(parseHandoff(utf8Decode((await storage.get('checkpoints/chromatic-quest/chk-001.md'))!.bytes)).decisions).toEqual(
      example.decisions,
    );

    const plan = await planResume({ storage, profile: handoffMarkdown, runId: 'chromatic-quest', clock });
    expect(plan.snapshot.id).toBe('chk-003');
    expect(plan.source.origin).toBe('latest');
    expect(plan).toMatchObject({ at: 'Phase 4: cache generated images in IndexedDB', reason: 'next_action', eligible: true });
    expect(plan.continuationPrompt).toBe(
      'Continue from hand-off checkpoint chk-003.\nNext actions:\n- Phase 4: cache generated images in IndexedDB\n- Blocked: None',
    );
    expect(plan.payload.decisions.map((d) => d.split(' — ')[0])).toEqual([...example.decisions, 'Scoring: combo multiplier capped at 8x']);
    expect(plan.nextSequence).toBe(4);
  });

  it('a hand-edited latest.md is the newest truth: resumed from, with checkpoint_integrity_mismatch, not an older chk-NNN.md', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'quest', clock });
    await writer.checkpoint({ source: 'session_break', status: 'in_progress', payload: payloadOf(example) });
    t += 10_000;
    await writer.checkpoint({
      source: 'major_decision',
      status: 'in_progress',
      payload: { ...payloadOf(example), decisions: [...example.decisions, 'Sound: off by default'] },
    });
    await writer.close();
    const latest = 'checkpoints/quest/latest.md';
    const text = utf8Decode((await storage.get(latest))!.bytes);
    await storage.put(
      latest,
      utf8Encode(text.replace('- Phase 3: Implement game mechanics', '- Phase 3: Implement game mechanics and sound')),
    );

    const plan = await planResume({ storage, profile: handoffMarkdown, runId: 'quest', clock });
    expect(plan.snapshot).toMatchObject({ id: 'chk-002', sequence: 2, source: 'major_decision' });
    expect(plan.source.key).toBe(latest);
    expect(plan.warnings.map((w) => w.code)).toContain('checkpoint_integrity_mismatch');
    expect(plan.at).toBe('Phase 3: Implement game mechanics and sound (timer, scoring, combos)');
    expect(plan.payload.decisions.at(-1)).toBe('Sound: off by default');

    // converting line endings is not an edit
    await storage.put(latest, utf8Encode(text.replace(/\n/g, '\r\n')));
    const clean = await planResume({ storage, profile: handoffMarkdown, runId: 'quest', clock });
    expect(clean.source.origin).toBe('latest');
    expect(clean.warnings.map((w) => w.code)).not.toContain('checkpoint_integrity_mismatch');
  });

  it('on the file system: real chk-NNN.md files a person can open, with a custom id prefix', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-handoff-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const storage = fsStorage({ dir });
    const profile = handoffMarkdownProfile({ root: 'handoffs', idPrefix: 'session-abc' });
    const writer = createWriter({ storage, profile, runId: 'abc', clock });
    for (let i = 0; i < 3; i++) {
      t += 5000;
      const r = await writer.checkpoint({
        source: 'phase_completion',
        status: 'in_progress',
        payload: { ...payloadOf(example), currentState: [`step ${i}`] },
      });
      expect(r.ok).toBe(true);
    }
    await writer.close();
    expect(
      readdirSync(join(dir, 'handoffs', 'abc'))
        .filter((f) => f.endsWith('.md'))
        .sort(),
    ).toEqual(['latest.md', 'session-abc-001.md', 'session-abc-002.md', 'session-abc-003.md']);
    const onDisk = readFileSync(join(dir, 'handoffs', 'abc', 'session-abc-002.md'), 'utf8');
    expect(parseHandoff(onDisk)).toMatchObject({ checkpoint: 'session-abc-002', currentState: ['step 1'] });
    // a person deletes latest.md: resume scans the chk files
    rmSync(join(dir, 'handoffs', 'abc', 'latest.md'));
    const plan = await planResume({ storage, profile, runId: 'abc', clock });
    expect(plan.snapshot.id).toBe('session-abc-003');
    expect(plan.payload.currentState).toEqual(['step 2']);
    await storage.close();
  });

  it('retention as for any profile: keep the last three, gzip kept history older than a day, latest.md never touched, resume still works', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'long', clock });
    for (let i = 1; i <= 6; i++) {
      t += 3_600_000;
      const r = await writer.checkpoint({
        source: 'phase_completion',
        status: 'in_progress',
        payload: { ...payloadOf(example), currentState: [`phase ${i} done`] },
      });
      expect(r.ok).toBe(true);
    }
    await writer.close();
    t += 48 * 3_600_000;
    const { plan } = await runRetention({
      storage,
      profile: handoffMarkdown,
      policy: { rules: [keepLast(3)], compressAfter: '24h' },
      clock,
    });
    expect(plan.operations.length).toBeGreaterThan(0);
    const keys = (await listAll(storage, 'checkpoints/long/')).map((e) => e.key).filter((k) => /\.md(\.gz)?$/.test(k));
    expect(keys).toEqual([
      'checkpoints/long/chk-004.md.gz',
      'checkpoints/long/chk-005.md.gz',
      'checkpoints/long/chk-006.md.gz',
      'checkpoints/long/latest.md',
    ]);
    const resumed = await planResume({ storage, profile: handoffMarkdown, runId: 'long', clock });
    expect(resumed.payload.currentState).toEqual(['phase 6 done']);
    // the gzipped history still decodes through the one read path
    await storage.delete('checkpoints/long/latest.md');
    await storage.delete('checkpoints/long/chk-006.md.gz');
    expect((await planResume({ storage, profile: handoffMarkdown, runId: 'long', clock })).payload.currentState).toEqual(['phase 5 done']);
  });
});

describe('handoffMarkdown history is immutable', () => {
  it('a trigger coalesced into a hand-off leaves its chk-NNN.md byte for byte; latest.md and resume record it, the next hand-off carries it', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'quiet', clock });
    const first = await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload: payloadOf(example) });
    if (!first.ok) throw first.error;
    const written = (await storage.get(first.key))!.bytes;
    t += 1_000;
    const again = await writer.checkpoint({ source: 'context_shift', status: 'in_progress', payload: payloadOf(example) });
    expect(again).toMatchObject({ ok: true, outcome: 'coalesced', snapshotId: 'chk-001' });
    expect((await storage.get(first.key))!.bytes).toEqual(written);
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: 'quiet', clock });
    expect(plan.snapshot.sourceDetails.map((d) => d.source)).toEqual(['context_shift']);
    t += 60_000;
    const next = await writer.checkpoint({
      source: 'session_break',
      status: 'in_progress',
      payload: { ...payloadOf(example), decisions: [...example.decisions, 'Ship it'] },
    });
    if (!next.ok) throw next.error;
    expect(next.snapshot.sourceDetails).toEqual([expect.objectContaining({ source: 'context_shift', coalesced_into: 'chk-001' })]);
    expect((await storage.get(first.key))!.bytes).toEqual(written);
    await writer.close();
  });
});
