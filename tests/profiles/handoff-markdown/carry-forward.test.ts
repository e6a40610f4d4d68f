import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  contextPressure,
  detectHandoffTriggers,
  HANDOFF_TRIGGERS,
  nextCheckpoint,
  nextCheckpointId,
  parseHandoff,
  renderHandoff,
  type HandoffDocument,
} from 'savepoint/handoff-markdown';
import { artifactEntry, decision, handoffDocument, item, playByPlayEntry } from './arbitraries.js';

const chk003 = parseHandoff(readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8'));
const clock = { now: () => Date.UTC(2025, 11, 15, 10, 0, 0) };
const minimal = { currentState: ['Phases 1-3 complete'], nextActions: ['Phase 4: offline mode', 'Blocked: None'] };

describe('nextCheckpoint follows the compression-behaviour table', () => {
  it('numbers the next checkpoint and stamps it from the clock', () => {
    const next = nextCheckpoint(chk003, minimal, { clock });
    expect(next.checkpoint).toBe('chk-004');
    expect(next.created).toBe('2025-12-15T10:00:00.000Z');
    expect(next.anchor).toBeUndefined(); // an anchor belongs to one checkpoint
    expect(
      nextCheckpoint(chk003, { ...minimal, checkpoint: 'chk-010', created: '2025-12-16T00:00:00Z', anchor: 'end-of-phase-3' }),
    ).toMatchObject({
      checkpoint: 'chk-010',
      created: '2025-12-16T00:00:00Z',
      anchor: 'end-of-phase-3',
    });
  });

  it('Problem: copied forward; Session Intent: updated only when the goal shifts', () => {
    const same = nextCheckpoint(chk003, minimal, { clock });
    expect(same.problem).toBe(chk003.problem);
    expect(same.sessionIntent).toBe(chk003.sessionIntent);
    const shifted = nextCheckpoint(chk003, { ...minimal, sessionIntent: 'Ship a mobile version first.' }, { clock });
    expect(shifted.sessionIntent).toBe('Ship a mobile version first.');
    expect(shifted.problem).toBe(chk003.problem);
  });

  it('Decisions: accumulated, never dropped, not repeated', () => {
    const next = nextCheckpoint(
      chk003,
      { ...minimal, decisions: ['Scoring: combo multiplier capped at 8x', 'Platform: Web (browser)'] },
      { clock },
    );
    expect(next.decisions).toEqual([...chk003.decisions, 'Scoring: combo multiplier capped at 8x']);
  });

  it('Technical Context: replaced, or edited with add/remove, when changes occur', () => {
    expect(nextCheckpoint(chk003, minimal, { clock }).technicalContext).toEqual(chk003.technicalContext);
    expect(nextCheckpoint(chk003, { ...minimal, technicalContext: ['Svelte 5'] }, { clock }).technicalContext).toEqual(['Svelte 5']);
    expect(
      nextCheckpoint(
        chk003,
        {
          ...minimal,
          technicalContext: { remove: ['Vite 7.x, Tailwind CSS 4.x'], add: ['Vite 8.x, Tailwind CSS 4.x', 'HTML5 Canvas API'] },
        },
        { clock },
      ).technicalContext,
    ).toEqual(['React 19.x + TypeScript 5.x', 'HTML5 Canvas API', '@google/genai SDK', 'Vite 8.x, Tailwind CSS 4.x']);
  });

  it('Play-By-Play: appended', () => {
    const entry = { phase: 'Phase 3', action: 'Implemented timer, scoring, combos', outcome: 'Complete' };
    expect(nextCheckpoint(chk003, { ...minimal, playByPlay: [entry] }, { clock }).playByPlay).toEqual([...chk003.playByPlay, entry]);
  });

  it('Artifact Trail: merged by file, completed/irrelevant entries pruned, active ones kept', () => {
    const scoring = { file: 'src/game/scoring.ts', status: 'created', keyChange: 'Combo scoring' };
    const gemini = { file: 'src/services/gemini.ts', status: 'modified', keyChange: 'Quota handling' };
    const merged = nextCheckpoint(chk003, { ...minimal, artifactTrail: [scoring, gemini] }, { clock });
    expect(merged.artifactTrail.map((a) => a.file)).toEqual([
      'src/services/imageProcessor.ts',
      'src/hooks/useImageGeneration.ts',
      'src/game/scoring.ts',
      'src/services/gemini.ts',
    ]);
    expect(merged.artifactTrail[3]).toEqual(gemini);

    const pruned = nextCheckpoint(
      chk003,
      { ...minimal, artifactTrail: [scoring], pruneArtifacts: ['src/services/imageProcessor.ts', 'src/game/scoring.ts'] },
      { clock },
    );
    expect(pruned.artifactTrail.map((a) => a.file)).toEqual([
      'src/services/gemini.ts',
      'src/hooks/useImageGeneration.ts',
      'src/game/scoring.ts',
    ]);

    const inactive = nextCheckpoint(
      chk003,
      {
        currentState: ['useImageGeneration hook in src/hooks/useImageGeneration.ts is wired'],
        nextActions: ['Phase 4'],
        artifactTrail: [scoring],
        pruneArtifacts: 'inactive',
      },
      { clock },
    );
    expect(inactive.artifactTrail.map((a) => a.file)).toEqual(['src/hooks/useImageGeneration.ts', 'src/game/scoring.ts']);

    const byPredicate = nextCheckpoint(
      chk003,
      { ...minimal, pruneArtifacts: (e) => e.status === 'created' && e.file.includes('services') },
      { clock },
    );
    expect(byPredicate.artifactTrail.map((a) => a.file)).toEqual(['src/hooks/useImageGeneration.ts']);
  });

  it('Current State and Next Actions: replaced entirely', () => {
    const next = nextCheckpoint(chk003, minimal, { clock });
    expect(next.currentState).toEqual(minimal.currentState);
    expect(next.nextActions).toEqual(minimal.nextActions);
  });

  it('User Rules: copied forward unless changed; extra sections carried; savepoint front matter dropped', () => {
    expect(nextCheckpoint(chk003, minimal, { clock }).userRules).toEqual(chk003.userRules);
    expect(nextCheckpoint(chk003, { ...minimal, userRules: ['Ask before deleting files'] }, { clock }).userRules).toEqual([
      'Ask before deleting files',
    ]);
    expect(nextCheckpoint(chk003, { ...minimal, userRules: null }, { clock }).userRules).toBeUndefined();
    const stored: HandoffDocument = {
      ...chk003,
      frontMatter: {
        tags: ['web'],
        run_id: 'r1',
        sequence: 3,
        source: 'phase_completion',
        status: 'in_progress',
        integrity: { format_version: '1.0', algorithm: 'sha256', checksum: '0'.repeat(64) },
      },
      extraSections: [{ heading: 'Notes', body: 'quota' }],
    };
    const next = nextCheckpoint(stored, minimal, { clock });
    expect(next.frontMatter).toEqual({ tags: ['web'] });
    expect(next.extraSections).toEqual([{ heading: 'Notes', body: 'quota' }]);
  });

  it('nextCheckpointId keeps the padding and refuses ids without a number', () => {
    expect(nextCheckpointId('chk-009')).toBe('chk-010');
    expect(nextCheckpointId('session-abc-099')).toBe('session-abc-100');
    expect(nextCheckpointId('chk-999')).toBe('chk-1000');
    expect(() => nextCheckpointId('chk')).toThrow(/checkpoint_config_invalid/);
  });

  it('table rules hold for any document and update (property)', () => {
    fc.assert(
      fc.property(
        handoffDocument,
        fc.record({
          decisions: fc.array(decision, { maxLength: 3 }),
          playByPlay: fc.array(playByPlayEntry, { maxLength: 3 }),
          artifactTrail: fc.array(artifactEntry, { maxLength: 3 }),
          currentState: fc.array(item, { maxLength: 3 }),
          nextActions: fc.array(item, { maxLength: 3 }),
        }),
        (prev, update) => {
          const next = nextCheckpoint(prev, update, { clock });
          expect(next.problem).toBe(prev.problem);
          expect(next.sessionIntent).toBe(prev.sessionIntent);
          expect(next.decisions.slice(0, prev.decisions.length)).toEqual(prev.decisions); // never dropped
          for (const d of update.decisions) expect(next.decisions.map((x) => x.trim())).toContain(d.trim());
          expect(next.playByPlay).toEqual([...prev.playByPlay, ...update.playByPlay]);
          for (const a of update.artifactTrail) {
            const last = update.artifactTrail.filter((x) => x.file.trim() === a.file.trim()).at(-1);
            expect(next.artifactTrail.filter((x) => x.file.trim() === a.file.trim())).toEqual([last]); // one entry per touched file, the newest
          }
          expect(
            next.artifactTrail
              .slice(next.artifactTrail.length - new Set(update.artifactTrail.map((a) => a.file.trim())).size)
              .map((a) => a.file.trim()),
          ).toEqual([...new Set(update.artifactTrail.map((a) => a.file.trim()).reverse())].reverse()); // touched files move to the end, in the update's order
          expect(next.currentState).toEqual(update.currentState);
          expect(next.nextActions).toEqual(update.nextActions);
          expect(next.userRules).toEqual(prev.userRules);
          // the result is a valid document that renders and reads back
          expect(parseHandoff(renderHandoff(next)).decisions.length).toBe(next.decisions.length);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('triggers', () => {
  it('declares the five triggers of the spec, in its order', () => {
    expect(Object.keys(HANDOFF_TRIGGERS)).toEqual([
      'phase_completion',
      'major_decision',
      'context_shift',
      'session_break',
      'pre_compression',
    ]);
  });

  it('detects phase completion, major decision and context shift from a change', () => {
    expect(detectHandoffTriggers(undefined, chk003)).toEqual([]);
    expect(detectHandoffTriggers(chk003, nextCheckpoint(chk003, minimal, { clock }))).toEqual([]);
    const next = nextCheckpoint(
      chk003,
      {
        ...minimal,
        playByPlay: [{ phase: 'Phase 3', action: 'Game mechanics', outcome: 'Complete' }],
        decisions: ['Timer: 90 s'],
        sessionIntent: 'A different goal',
      },
      { clock },
    );
    expect(detectHandoffTriggers(chk003, next)).toEqual(['phase_completion', 'major_decision', 'context_shift']);
    expect(detectHandoffTriggers(chk003, { ...chk003, decisions: [...chk003.decisions, 'New'] })).toEqual(['major_decision']);
  });

  it('pre-compression is due at the context-pressure threshold', () => {
    expect(contextPressure({ usedTokens: 79_999, contextWindowTokens: 100_000 })).toBe(false);
    expect(contextPressure({ usedTokens: 80_000, contextWindowTokens: 100_000 })).toBe(true);
    expect(contextPressure({ usedTokens: 50_000, contextWindowTokens: 100_000, threshold: 0.5 })).toBe(true);
    expect(() => contextPressure({ usedTokens: 1, contextWindowTokens: 0 })).toThrow(/checkpoint_config_invalid/);
  });
});
