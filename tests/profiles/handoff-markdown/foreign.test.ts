import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, findIncompleteRuns, memoryStorage, planResume } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { fsStorage } from 'savepoint/fs';
import {
  compress,
  estimateTokens,
  handoffMarkdown,
  importHandoffMarkdownDocument,
  importHandoffMarkdownRun,
  parseHandoff,
  renderHandoff,
  SEAL_LINE_MAX_TOKENS,
  type HandoffDocument,
  type HandoffPayload,
} from 'savepoint/handoff-markdown';
import { runCli } from '../../../src/cli/run.js';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { captureIo } from '../../support/cli-io.js';
import { handoffDocument, line } from './arbitraries.js';
import { foreignFixture, putFixtures, readWarningCodes, storedText, tempDirs } from '../../support/foreign.js';

const clock = manualClock('2026-01-15T15:00:00Z');
const RUN = 'chromatic-quest';
const LATEST = `checkpoints/${RUN}/latest.md`;
const codes = readWarningCodes;
const readCodes = readWarningCodes;
const payloadOf = ({ checkpoint: _c, created: _d, frontMatter: _f, ...payload }: HandoffDocument): HandoffPayload => payload;
const text = storedText;

const tempDir = tempDirs('savepoint-handoff-foreign-');

describe('hand-offs another tool wrote resume (handoff-markdown.md read by its own rules)', () => {
  it("the spec's chk-003 example verbatim resumes with checkpoint_unsealed as snapshot 3 of its folder's run, at its first Next Action", async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'handoff-markdown', {
      [LATEST]: 'chk-003.spec-example.md',
      [`checkpoints/${RUN}/chk-003.md`]: 'chk-003.spec-example.md',
    });
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(plan.snapshot).toMatchObject({
      id: 'chk-003',
      runId: RUN,
      sequence: 3,
      createdAt: '2025-12-14T15:30:00Z',
      source: 'session_break',
      status: 'in_progress',
    });
    expect(plan).toMatchObject({ at: 'Phase 3: Implement game mechanics (timer, scoring, combos)', reason: 'next_action', eligible: true });
    expect(plan.payload.anchor).toBe('end-of-phase-2');
    expect(plan.skipped).toEqual([]);
    expect((await findIncompleteRuns({ storage, profile: handoffMarkdown })).map((r) => [r.runId, r.sequence, r.readWarnings])).toEqual([
      [RUN, 3, ['checkpoint_unsealed']],
    ]);
  });

  it('another offset and precision, vendor keys, sections in another order, extra sections, a title and CRLF', async () => {
    for (const fixture of ['chk-004.vendor.md', 'chk-004.vendor.crlf.md']) {
      const storage = memoryStorage();
      await putFixtures(storage, 'handoff-markdown', { [LATEST]: fixture });
      const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
      expect(codes(plan)).toContain('checkpoint_unsealed');
      expect(plan.snapshot).toMatchObject({ id: 'chk-004', sequence: 4, createdAt: '2025-12-14T15:45:12.123Z' });
      expect(plan.payload).toMatchObject({
        currentState: ['Phases 1-3 complete'],
        playByPlay: [{ phase: 'Phase 3', action: 'Implemented timer, scoring, combos', outcome: 'Complete' }],
      });
      expect(plan.payload.extraSections?.map((s) => s.heading)).toEqual(['Chromatic Quest hand-off', 'Risks', 'Open Questions']);
      expect(plan.payload.userRules).toBeUndefined();
    }
  });

  it("another tool's checksum key is checkpoint_foreign_seal; an unsealed chk-NNN.md in history is found when latest.md is gone", async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'handoff-markdown', {
      [`checkpoints/${RUN}/chk-002.md`]: 'chk-002.foreign-seal.md',
      [`checkpoints/${RUN}/chk-003.md`]: 'chk-003.spec-example.md',
    });
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(plan.snapshot.id).toBe('chk-003');
    await storage.delete(`checkpoints/${RUN}/chk-003.md`);
    const older = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(older.snapshot).toMatchObject({ id: 'chk-002', sequence: 2, createdAt: '2025-12-14T19:00:00.000Z' });
    expect(codes(older)).toContain('checkpoint_foreign_seal');
    expect(older.payload.artifactTrail).toEqual([]);
  });

  it('savepoint verify: an unsealed latest.md is a warning; a changed chk-NNN.md savepoint sealed stays a problem', async () => {
    const dir = tempDir();
    const storage = fsStorage({ dir });
    await putFixtures(storage, 'handoff-markdown', { [LATEST]: 'chk-003.spec-example.md' });
    const verify = async (): Promise<{
      code: number;
      json: { problems: number; findings: { key: string; level: string; reasonCode: string }[] };
    }> => {
      const io = captureIo();
      const code = await runCli(['verify', '--json', '--profile', 'handoffMarkdown', '--dir', dir], io);
      return { code, json: JSON.parse(io.out) as never };
    };
    let res = await verify();
    expect(res.code).toBe(0);
    expect(res.json.findings).toContainEqual(expect.objectContaining({ key: LATEST, reasonCode: 'checkpoint_unsealed' }));
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect((await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload: plan.payload })).ok).toBe(true);
    await writer.close();
    const history = `checkpoints/${RUN}/chk-004.md`;
    await storage.put(history, utf8Encode((await text(storage as never, history)).replace('Build passing', 'Build failing')));
    res = await verify();
    expect(res.code).toBe(1);
    expect(res.json.findings).toContainEqual(
      expect.objectContaining({ key: history, level: 'problem', reasonCode: 'checkpoint_integrity_mismatch' }),
    );
    await storage.close();
  });
});

describe('a stale seal: latest.md edited after savepoint sealed it', () => {
  it('is the newest truth (checkpoint_integrity_mismatch, the bookkeeping kept); the same edit in chk-NNN.md is refused', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'handoff-markdown', { [LATEST]: 'latest.stale-seal.md' });
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(codes(plan)).toEqual(['checkpoint_integrity_mismatch']);
    expect(plan.snapshot).toMatchObject({ id: 'chk-003', sequence: 3, source: 'phase_completion' });
    expect(plan.payload.nextActions).toContain('Phase 4: offline mode (added by hand)');
    await storage.delete(LATEST);
    await putFixtures(storage, 'handoff-markdown', { [`checkpoints/${RUN}/chk-003.md`]: 'latest.stale-seal.md' });
    await expect(planResume({ storage, profile: handoffMarkdown, runId: RUN, clock })).rejects.toMatchObject({
      reasonCode: 'checkpoint_no_valid_snapshot',
      details: { reasonCodes: ['checkpoint_integrity_mismatch'] },
    });
  });
});

describe('hand-offs an earlier savepoint stored (run_id, sequence, … and an integrity object)', () => {
  it('read strictly; an edited latest.md is resumed with checkpoint_integrity_mismatch; the next write uses the seal line and drops the old keys', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'handoff-markdown', {
      [LATEST]: 'latest.savepoint-0.md',
      [`checkpoints/${RUN}/chk-001.md`]: 'chk-001.savepoint-0.md',
    });
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(codes(plan)).toEqual([]);
    expect(plan.snapshot).toMatchObject({ id: 'chk-002', sequence: 2, source: 'major_decision', createdAt: '2025-12-14T15:31:00.000Z' });
    await storage.put(LATEST, utf8Encode((await text(storage, LATEST)).replace('- Blocked: None', '- Phase 4: sound\n- Blocked: None')));
    const edited = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(codes(edited)).toEqual(['checkpoint_integrity_mismatch']);
    expect(edited.snapshot).toMatchObject({ sequence: 2, source: 'major_decision' });
    expect(edited.payload.nextActions).toContain('Phase 4: sound');
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(await writer.checkpoint({ source: 'session_break', status: 'paused', payload: edited.payload })).toMatchObject({
      ok: true,
      sequence: 3,
    });
    await writer.close();
    expect(parseHandoff(await text(storage, LATEST)).frontMatter).toEqual({
      savepoint: expect.stringMatching(/^1\.0 3 session_break paused /),
    });
  });
});

describe('the other tool writes → savepoint resumes and writes → the other tool rewrites → savepoint resumes', () => {
  it('end to end on one latest.md: vendor keys, comments, a title and extra sections survive, byte for byte', async () => {
    const storage = memoryStorage();
    const vendor = foreignFixture('handoff-markdown', 'chk-004.vendor.md');
    await storage.put(LATEST, utf8Encode(vendor));
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
    const { extraSections: _theirs, ...mine } = plan.payload;
    const written = await writer.checkpoint({
      source: 'phase_completion',
      status: 'in_progress',
      payload: { ...mine, currentState: ['Phases 1-4 complete'] },
    });
    expect(written).toMatchObject({ ok: true, sequence: 5, snapshotId: 'chk-005' });
    await writer.close();
    const stored = await text(storage, LATEST);
    for (const theirs of [
      '# written by another hand-off tool',
      'author: claude-code',
      'tags: [offline, gemini]',
      'x-tool:\n  version: 2\n  session: "abc-123"',
      '# Chromatic Quest hand-off\n\nWritten at the end of phase 3.',
      '### Risks\n- IndexedDB quota on Safari',
      '## Open Questions\n- Should hints cost points?',
    ]) {
      expect(stored).toContain(theirs);
    }
    expect(parseHandoff(stored).frontMatter).toMatchObject({
      author: 'claude-code',
      tags: ['offline', 'gemini'],
      'x-tool': { version: 2, session: 'abc-123' },
    });
    const again = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(codes(again)).not.toContain('checkpoint_integrity_mismatch');
    expect(again.snapshot).toMatchObject({ id: 'chk-005', sequence: 5 });
    expect(again.payload.currentState).toEqual(['Phases 1-4 complete']);

    // The other tool rewrites latest.md its own way (savepoint's seal line gone, a new section).
    const theirs = stored
      .replace(/savepoint: .*\n/, '')
      .replace('checkpoint: chk-005', 'checkpoint: chk-006')
      .replace('- Phases 1-4 complete', '- Phases 1-5 complete');
    await storage.put(LATEST, utf8Encode(`${theirs}\n## Handoff Notes\n- tool rewrite\n`));
    const resumed = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(codes(resumed)).toContain('checkpoint_unsealed');
    expect(resumed.snapshot).toMatchObject({ id: 'chk-006', sequence: 6 });
    expect(resumed.payload.currentState).toEqual(['Phases 1-5 complete']);
    // … and savepoint continues after it.
    const next = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
    expect(
      await next.checkpoint({ source: 'session_break', status: 'paused', payload: { ...mine, currentState: ['paused'] } }),
    ).toMatchObject({ ok: true, sequence: 7 });
    await next.close();
    expect(await text(storage, LATEST)).toContain('## Handoff Notes\n- tool rewrite');
  });

  it('property: any spec-valid foreign hand-off (any offset and precision, CRLF) resumes, and its unknown keys and sections survive a savepoint rewrite byte for byte', async () => {
    const key = fc
      .stringMatching(/^[a-z][a-z0-9_]{0,12}$/)
      .filter((k) => !['checkpoint', 'created', 'anchor', 'savepoint', 'savepoint_coalesced'].includes(k));
    const plain = fc.stringMatching(/^[a-z][a-z0-9 .-]{0,20}[a-z0-9]$/);
    const scalar = fc.oneof(
      plain,
      fc.integer().map(String),
      plain.map((l) => `"${l}"`),
      plain.map((l) => `[${l}, x]`),
    );
    // `created` with any offset (with or without a colon, or Z) and 0-6 fraction digits.
    const created = fc
      .record({
        ms: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 0, 1) }),
        digits: fc.integer({ min: 0, max: 6 }),
        quarter: fc.integer({ min: -56, max: 56 }),
        colon: fc.boolean(),
      })
      .map(({ ms, digits, quarter, colon }) => {
        const offset = quarter * 15;
        const local = new Date(ms + offset * 60_000).toISOString();
        const frac = digits > 0 ? `.${local.slice(20, 23).padEnd(6, '7').slice(0, digits)}` : '';
        const zone =
          offset === 0
            ? 'Z'
            : `${offset < 0 ? '-' : '+'}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
        const text = `${local.slice(0, 19)}${frac}${zone}`;
        return { text: colon ? text : text.replace(/([+-]\d{2}):(\d{2})$/, '$1$2'), instant: Date.parse(text) };
      });
    await fc.assert(
      fc.asyncProperty(
        handoffDocument,
        created,
        fc.boolean(),
        fc.uniqueArray(fc.tuple(key, scalar), { selector: ([k]) => k, maxLength: 3 }),
        fc.array(line, { maxLength: 2 }),
        async (doc, time, crlf, vendor, notes) => {
          const storage = memoryStorage();
          const { frontMatter: _f, extraSections: _e, ...spec } = doc;
          const base = renderHandoff({ ...spec, checkpoint: 'chk-002' }).replace(/^created: .*$/m, `created: ${time.text}`);
          const yaml = vendor.map(([k, v]) => `${k}: ${v}`);
          const section = notes.length > 0 ? `## Vendor Notes\n${notes.map((n) => `- ${n}`).join('\n')}` : undefined;
          const foreign = `${base.replace(/\n---\n/, `\n${yaml.map((l) => `${l}\n`).join('')}---\n`)}${section ? `\n${section}\n` : ''}`;
          await storage.put(LATEST, utf8Encode(crlf ? foreign.replace(/\n/g, '\r\n') : foreign));
          const plan = await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock });
          expect(plan.snapshot.sequence).toBe(2);
          expect(Date.parse(plan.snapshot.createdAt)).toBe(time.instant);
          expect(plan.payload.nextActions).toEqual(doc.nextActions);
          const writer = createWriter({ storage, profile: handoffMarkdown, runId: RUN, clock });
          expect(
            (
              await writer.checkpoint({
                source: 'phase_completion',
                status: 'in_progress',
                payload: payloadOf({ ...doc, extraSections: [] } as HandoffDocument),
              })
            ).ok,
          ).toBe(true);
          await writer.close();
          const stored = await text(storage, LATEST);
          for (const l of yaml) expect(stored).toContain(`\n${l}\n`);
          if (section) expect(stored).toContain(section);
          expect(readCodes(await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock }))).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('token accounting: the stored hand-off fits the budget given to compress()', () => {
  it("property over budgets and documents: stored ≤ budget, and savepoint's own front matter costs ≤ 25 tokens", async () => {
    await fc.assert(
      fc.asyncProperty(
        handoffDocument,
        fc.integer({ min: 150, max: 1500 }),
        fc.integer({ min: 1, max: 2000 }),
        async (doc, budget, sequence) => {
          let compact;
          try {
            compact = compress(doc, { maxTokens: budget }).document;
          } catch {
            return; // Must Keep alone is over the budget
          }
          const stored = await handoffMarkdown.document.encode({
            id: `chk-${String(sequence).padStart(3, '0')}`,
            runId: RUN,
            sequence,
            createdAt: '2026-01-15T15:00:00.000Z',
            source: 'phase_completion',
            sourceDetails: [],
            status: 'in_progress',
            payload: payloadOf(compact),
          });
          const storedText = utf8Decode(stored.bytes);
          expect(estimateTokens(storedText)).toBeLessThanOrEqual(budget);
          const sealLine = /\nsavepoint: .*\n/.exec(storedText)![0].slice(1);
          expect(estimateTokens(sealLine)).toBeLessThanOrEqual(SEAL_LINE_MAX_TOKENS);
          expect(estimateTokens(storedText) - estimateTokens(storedText.replace(sealLine, ''))).toBeLessThanOrEqual(25);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('import of hand-off runs', () => {
  it('dry run by default, seals in place with --apply, idempotent; the sealed files read strictly and keep every line', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'handoff-markdown', {
      [LATEST]: 'chk-004.vendor.md',
      [`checkpoints/${RUN}/chk-002.md`]: 'chk-002.foreign-seal.md',
      [`checkpoints/${RUN}/chk-003.md`]: 'chk-003.spec-example.md',
    });
    const dry = await importHandoffMarkdownRun(storage, RUN);
    expect(dry).toMatchObject({ applied: false, changes: 3 });
    expect(await text(storage, LATEST)).toBe(foreignFixture('handoff-markdown', 'chk-004.vendor.md'));
    const applied = await importHandoffMarkdownRun(storage, RUN, { apply: true });
    expect(applied.files.map((f) => [f.key, f.action])).toEqual(
      expect.arrayContaining([
        [LATEST, 'seal'],
        [`checkpoints/${RUN}/chk-002.md`, 'seal'],
        [`checkpoints/${RUN}/chk-003.md`, 'seal'],
      ]),
    );
    const sealed = await text(storage, LATEST);
    expect(sealed.replace(/savepoint: .*\n/, '')).toBe(foreignFixture('handoff-markdown', 'chk-004.vendor.md'));
    expect(await handoffMarkdown.document.decode(utf8Encode(sealed), LATEST)).toMatchObject({ id: 'chk-004', sequence: 4, runId: RUN });
    expect((await importHandoffMarkdownRun(storage, RUN, { apply: true })).changes).toBe(0);
    expect(readCodes(await planResume({ storage, profile: handoffMarkdown, runId: RUN, clock }))).toEqual([]);
    // an edit after sealing: latest.md is sealed again, its bookkeeping kept
    await storage.put(LATEST, utf8Encode(sealed.replace('- Phases 1-3 complete', '- Phases 1-3 complete, tested')));
    const resealed = await importHandoffMarkdownRun(storage, RUN, { apply: true });
    expect(resealed.files.find((f) => f.key === LATEST)).toMatchObject({ action: 'seal', warnings: ['checkpoint_integrity_mismatch'] });
  });

  it('importHandoffMarkdownDocument and `savepoint import` copying into another store', async () => {
    const spec = readFileSync(new URL('../../fixtures/foreign/handoff-markdown/chk-003.spec-example.md', import.meta.url));
    const { bytes, snapshot } = await importHandoffMarkdownDocument(spec, { runId: RUN });
    expect(snapshot).toMatchObject({ id: 'chk-003', runId: RUN, sequence: 3, source: 'session_break' });
    expect(await handoffMarkdown.document.decode(bytes, LATEST)).toEqual(snapshot);

    const from = tempDir();
    const to = tempDir();
    const source = fsStorage({ dir: from });
    await putFixtures(source, 'handoff-markdown', { [LATEST]: 'chk-003.spec-example.md' });
    await source.close();
    const run = async (args: string[]): Promise<{ code: number; out: string }> => {
      const io = captureIo();
      const code = await runCli(args, io);
      return { code, out: io.out };
    };
    const copy = await run(['import', '--profile', 'handoffMarkdown', '--dir', from, '--to-dir', to, '--apply', '--json']);
    expect(copy.code).toBe(0);
    expect((JSON.parse(copy.out) as { changes: number }).changes).toBe(1);
    expect(readFileSync(join(from, LATEST), 'utf8')).toBe(foreignFixture('handoff-markdown', 'chk-003.spec-example.md'));
    const again = await run(['import', '--profile', 'handoffMarkdown', '--dir', from, '--to-dir', to, '--apply', '--json']);
    expect((JSON.parse(again.out) as { changes: number }).changes).toBe(0);
    const target = fsStorage({ dir: to });
    expect(readCodes(await planResume({ storage: target, profile: handoffMarkdown, runId: RUN, clock }))).toEqual([]);
    await target.close();
  });
});
