import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from 'savepoint';
import {
  compress,
  estimateTokens,
  parseHandoff,
  renderHandoff,
  splitDecision,
  type HandoffDocument,
  type TokenCounter,
} from 'savepoint/handoff-markdown';
import { handoffDocument } from './arbitraries.js';

const example = parseHandoff(readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8'));

/** Must Keep alone, built here from the spec's hierarchy independently of the implementation. */
function mustKeepOnly(doc: HandoffDocument): HandoffDocument {
  const { extraSections: _extra, ...rest } = doc;
  return {
    ...rest,
    technicalContext: [],
    playByPlay: [],
    artifactTrail: [],
    decisions: doc.decisions.map((d) => splitDecision(d).decision),
  };
}

function expectMustKeepIntact(before: HandoffDocument, after: HandoffDocument): void {
  expect(after.checkpoint).toBe(before.checkpoint);
  expect(after.created).toBe(before.created);
  expect(after.anchor).toBe(before.anchor);
  expect(after.frontMatter).toEqual(before.frontMatter);
  expect(after.problem).toBe(before.problem);
  expect(after.sessionIntent).toBe(before.sessionIntent);
  expect(after.currentState).toEqual(before.currentState);
  expect(after.nextActions).toEqual(before.nextActions);
  expect(after.userRules).toEqual(before.userRules);
  expect(after.decisions).toHaveLength(before.decisions.length);
  after.decisions.forEach((d, i) => expect([before.decisions[i], splitDecision(before.decisions[i]!).decision]).toContain(d));
}

const counters: Record<string, TokenCounter> = {
  estimate: estimateTokens,
  words: (t) => t.split(/\s+/).filter(Boolean).length,
  bytes: (t) => new TextEncoder().encode(t).length,
};

describe('compress: properties', () => {
  for (const [name, countTokens] of Object.entries(counters)) {
    it(`never over budget unless Must Keep alone is, never loses a Must Keep item, stable (${name} counter)`, () => {
      fc.assert(
        fc.property(handoffDocument, fc.double({ min: 0.05, max: 1.2, noNaN: true }), (doc, fraction) => {
          const full = countTokens(renderHandoff(doc));
          const maxTokens = Math.max(1, Math.floor(full * fraction));
          const floor = countTokens(renderHandoff(mustKeepOnly(doc)));
          let result;
          try {
            result = compress(doc, { maxTokens, countTokens, reserveSeal: false });
          } catch (err) {
            expect(isCheckpointError(err, 'checkpoint_too_large')).toBe(true);
            expect(floor).toBeGreaterThan(maxTokens);
            expect((err as { details: Record<string, unknown> }).details).toMatchObject({ maxTokens, mustKeepTokens: floor });
            return;
          }
          expect(floor).toBeLessThanOrEqual(maxTokens);
          expect(result.mustKeepTokens).toBe(floor);
          expect(countTokens(renderHandoff(result.document))).toBe(result.tokens);
          expect(result.tokens).toBeLessThanOrEqual(maxTokens);
          expectMustKeepIntact(doc, result.document);
          // Stable: compressing the compressed document under the same budget changes nothing.
          const again = compress(result.document, { maxTokens, countTokens, reserveSeal: false });
          expect(again.document).toEqual(result.document);
          expect(again.actions).toEqual([]);
          if (full <= maxTokens) expect(result.document).toBe(doc);
        }),
        { numRuns: name === 'estimate' ? 200 : 60 },
      );
    });
  }

  it('the result is still a valid, renderable hand-off document (property)', () => {
    fc.assert(
      fc.property(handoffDocument, (doc) => {
        const floor = estimateTokens(renderHandoff(mustKeepOnly(doc)));
        const result = compress(doc, { maxTokens: floor, reserveSeal: false });
        expect(parseHandoff(renderHandoff(result.document))).toEqual(result.document);
      }),
      { numRuns: 60 },
    );
  });
});

describe('compress: the priority hierarchy', () => {
  const long: HandoffDocument = {
    ...example,
    decisions: [
      'Platform: Web (browser) — the user plays on laptops and tablets',
      'Image generation: Gemini API — best quality per cost',
      'Game name: Chromatic Quest',
    ],
    playByPlay: Array.from({ length: 8 }, (_, i) => ({
      phase: `Phase ${i + 1}`,
      action: `Did a considerable amount of work in step number ${i + 1}`,
      outcome: 'Complete',
    })),
    artifactTrail: [
      ...Array.from({ length: 6 }, (_, i) => ({
        file: `src/old/module${i}.ts`,
        status: 'created',
        keyChange: `An older module that was finished long ago, number ${i}`,
      })),
      { file: 'src/game/timer.ts', status: 'modified', keyChange: 'Timer ticks' },
      { file: 'src/game/scoring.ts', status: 'created', keyChange: 'Scores' },
    ],
    nextActions: ['Phase 9: wire src/old/module1.ts into the menu', 'Blocked: None'],
    extraSections: [{ heading: 'Notes', body: 'Some notes that are not in the spec at all and can go first.' }],
  };
  const full = estimateTokens(renderHandoff(long));

  it('a document within budget is returned as is', () => {
    const r = compress(long, { maxTokens: full, reserveSeal: false });
    expect(r.document).toBe(long);
    expect(r.actions).toEqual([]);
    expect(r.tokens).toBe(full);
  });

  it('cuts Can Summarize first: extra sections, then older Play-By-Play, keeping recent entries detailed', () => {
    const r = compress(long, { maxTokens: full - 30, reserveSeal: false });
    expect(r.document.extraSections).toBeUndefined();
    expect(r.document.technicalContext).toEqual(long.technicalContext);
    expect(r.document.decisions).toEqual(long.decisions);
    expect(r.document.artifactTrail).toEqual(long.artifactTrail);
    const pbp = r.document.playByPlay;
    const folded = long.playByPlay.length - (pbp.length - 1);
    expect(folded).toBeGreaterThanOrEqual(2);
    expect(folded).toBeLessThanOrEqual(5); // never more than the older entries while they suffice
    expect(pbp[0]).toEqual({ phase: `Phase 1 … Phase ${folded}`, action: `${folded} earlier actions (summarized)`, outcome: 'Complete' });
    expect(pbp.slice(-3)).toEqual(long.playByPlay.slice(-3)); // the recent ones stay detailed
    expect(r.actions).toEqual([
      'dropped 1 section outside the spec',
      `summarized ${folded} Play-By-Play entries (${folded} older, 0 recent)`,
    ]);
  });

  it('cuts Should Keep only once Can Summarize is exhausted, and keeps mentioned files longest (every budget)', () => {
    const floor = estimateTokens(renderHandoff(mustKeepOnly(long)));
    // keepRecent 3: module5, timer and scoring are recent; module1 is named in Next Actions.
    const completed = ['src/old/module0.ts', 'src/old/module2.ts', 'src/old/module3.ts', 'src/old/module4.ts'];
    const active = ['src/old/module1.ts', 'src/old/module5.ts', 'src/game/timer.ts', 'src/game/scoring.ts'];
    let sawShouldKeepCut = false;
    for (let budget = full; budget >= floor; budget -= 3) {
      const r = compress(long, { maxTokens: budget, reserveSeal: false }).document;
      expectMustKeepIntact(long, r);
      const files = r.artifactTrail.map((a) => a.file);
      const summarized = r.playByPlay[0]?.action.match(/^(\d+) earlier actions/);
      const folded = r.playByPlay.length === 0 ? long.playByPlay.length : summarized ? Number(summarized[1]) : 0;
      const canSummarizeDone =
        r.extraSections === undefined &&
        folded >= 5 &&
        completed.every((f) => !files.includes(f)) &&
        r.decisions.every((d) => !d.includes(' — '));
      const activeCut = active.some((f) => !files.includes(f));
      const shouldKeepCut = r.technicalContext.length < long.technicalContext.length || folded > 5 || activeCut;
      if (shouldKeepCut) {
        sawShouldKeepCut = true;
        expect({ budget, canSummarizeDone }).toEqual({ budget, canSummarizeDone: true });
      }
      if (activeCut) {
        expect(r.technicalContext).toEqual([]);
        expect(r.playByPlay).toEqual([]);
        // active rows go oldest first: the newest row is the last to go
        expect(files.includes('src/game/scoring.ts') || files.every((f) => f === '…')).toBe(true);
      }
    }
    expect(sawShouldKeepCut).toBe(true);
  });

  it('down to Must Keep alone, and a clear checkpoint_too_large below that', () => {
    const floor = estimateTokens(renderHandoff(mustKeepOnly(long)));
    const r = compress(long, { maxTokens: floor, reserveSeal: false });
    expect(r.document).toEqual(mustKeepOnly(long));
    expect(r.actions).toEqual(
      expect.arrayContaining([expect.stringMatching(/dropped all 8 Play-By-Play entries/), 'dropped the whole Artifact Trail']),
    );
    let caught: unknown;
    try {
      compress(long, { maxTokens: floor - 1, reserveSeal: false });
    } catch (err) {
      caught = err;
    }
    expect(isCheckpointError(caught, 'checkpoint_too_large')).toBe(true);
    expect((caught as Error).message).toMatch(/Must Keep .* needs \d+ tokens, over the budget of \d+/);
    expect((caught as { details: unknown }).details).toEqual({ maxTokens: floor - 1, mustKeepTokens: floor, originalTokens: full });
  });

  it('uses the token counter it is given', () => {
    const calls: string[] = [];
    compress(example, { maxTokens: 10_000, countTokens: (t) => (calls.push(t), 1), reserveSeal: false });
    expect(calls[0]).toBe(renderHandoff(example));
  });

  it('rejects a budget that is not a positive number', () => {
    expect(() => compress(example, { maxTokens: 0 })).toThrow(/checkpoint_config_invalid/);
    expect(() => compress(example, { maxTokens: Number.NaN })).toThrow(/checkpoint_config_invalid/);
  });
});

describe('estimateTokens and splitDecision', () => {
  it('estimates four ASCII characters per token and one per other character', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd')).toBe(1);
    expect(estimateTokens('abcde')).toBe(2);
    expect(estimateTokens('→✓')).toBe(2);
  });

  it('splits a decision from its rationale at an em dash, en dash, -- or further lines', () => {
    expect(splitDecision('Persistence: LocalStorage — works offline')).toEqual({
      decision: 'Persistence: LocalStorage',
      rationale: 'works offline',
    });
    expect(splitDecision('A -- because')).toEqual({ decision: 'A', rationale: 'because' });
    expect(splitDecision('A\nwhy it was chosen')).toEqual({ decision: 'A', rationale: 'why it was chosen' });
    expect(splitDecision('Platform: Web (browser)')).toEqual({ decision: 'Platform: Web (browser)' });
    expect(splitDecision('Phases 1-2')).toEqual({ decision: 'Phases 1-2' });
  });
});
