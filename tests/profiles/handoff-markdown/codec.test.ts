import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileValidator } from 'savepoint/toolkit';
import { isCheckpointError } from 'savepoint';
import { handoffDocumentJsonSchema, parseHandoff, renderHandoff, type HandoffDocument } from 'savepoint/handoff-markdown';
import { handoffDocument } from './arbitraries.js';

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/handoff/${name}`, import.meta.url), 'utf8');
const example = fixture('chk-003.md');

function schemaError(fn: () => unknown): { message: string; details: Record<string, unknown> } {
  try {
    fn();
  } catch (err) {
    expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
    return err as { message: string; details: Record<string, unknown> };
  }
  throw new Error('expected checkpoint_schema_invalid');
}

describe('the spec example (handoff-markdown.md § Example)', () => {
  it('parses into the document model, field for field', () => {
    const doc = parseHandoff(example);
    expect(doc).toMatchObject({
      checkpoint: 'chk-003',
      created: '2025-12-14T15:30:00Z',
      anchor: 'end-of-phase-2',
      problem: 'Build a paint-by-numbers game with AI-generated images.',
      decisions: [
        'Platform: Web (browser)',
        'Image generation: Gemini API',
        'Persistence: LocalStorage (no backend)',
        'Game name: Chromatic Quest',
      ],
      technicalContext: ['React 19.x + TypeScript 5.x', 'Vite 7.x, Tailwind CSS 4.x', 'HTML5 Canvas API', '@google/genai SDK'],
      playByPlay: [
        { phase: 'Phase 1', action: 'Implemented core canvas + color quantization', outcome: 'Complete' },
        { phase: 'Phase 2', action: 'Integrated Gemini API with retry logic', outcome: 'Complete' },
      ],
      artifactTrail: [
        { file: 'src/services/gemini.ts', status: 'created', keyChange: 'Gemini client with exponential backoff' },
        { file: 'src/services/imageProcessor.ts', status: 'created', keyChange: 'base64 → ImageData → PaintByNumbers pipeline' },
        { file: 'src/hooks/useImageGeneration.ts', status: 'created', keyChange: 'React hook for image generation' },
      ],
      currentState: ['Phases 1-2 complete and working', 'Dev server running at localhost:5173', 'Build passing, lint clean'],
      nextActions: ['Phase 3: Implement game mechanics (timer, scoring, combos)', 'Blocked: None'],
      userRules: ['Wait for user approval between phases', 'Do not commit without explicit request'],
    });
    expect(doc.sessionIntent).toMatch(/^Create "Chromatic Quest" - web game/);
    expect(doc.frontMatter).toBeUndefined();
    expect(doc.extraSections).toBeUndefined();
  });

  it('renders back byte for byte', () => {
    expect(renderHandoff(parseHandoff(example))).toBe(example);
  });

  it('parses the same with CRLF line endings and a byte-order mark', () => {
    expect(parseHandoff(`\uFEFF${example.replace(/\n/g, '\r\n')}`)).toEqual(parseHandoff(example));
  });

  it('validates against the exported JSON Schema with ajv', () => {
    const validate = compileValidator(handoffDocumentJsonSchema);
    expect(validate(parseHandoff(example))).toEqual([]);
    expect(validate({ ...parseHandoff(example), decisions: 'x' })).not.toEqual([]);
  });
});

describe('hand-written documents', () => {
  const doc = parseHandoff(fixture('hand-written.md'));

  it('reads headings in any case and level, *, + and numbered bullets, and extra blank lines', () => {
    expect(doc.checkpoint).toBe('chk-007');
    expect(doc.created).toBe('2025-12-15T09:05:00+01:00');
    expect(doc.anchor).toBe('42'); // written unquoted: a YAML number, read as its text
    expect(doc.frontMatter).toEqual({ tags: ['game', 'web'] });
    expect(doc.problem).toBe('Build a paint-by-numbers game with AI-generated images.');
    expect(doc.sessionIntent).toBe('Create "Chromatic Quest".\n\nMust work offline after initial generation.');
    expect(doc.decisions).toEqual(['Platform: Web (browser)', 'Persistence: LocalStorage — no backend to run']);
    expect(doc.currentState).toEqual(['Phases 1-2 complete and working\n  - nested detail', 'Build passing']);
    expect(doc.userRules).toBeUndefined();
  });

  it('keeps code fences whose lines start with # inside their item', () => {
    expect(doc.technicalContext).toEqual([
      'React 19.x + TypeScript 5.x',
      'Build setup:\n```sh\n# install\nnpm ci\n## not a heading\n```',
      'Vite 7.x',
    ]);
  });

  it('reads -> arrows and Play-By-Play lines with fewer than three parts', () => {
    expect(doc.playByPlay).toEqual([
      { phase: 'Phase 1', action: 'Implemented core canvas', outcome: 'Complete' },
      { phase: 'Phase 2', action: 'Integrated Gemini API', outcome: '' },
      { phase: '', action: 'Fixed a flaky test', outcome: '' },
    ]);
  });

  it('reads escaped pipes, aligned delimiters, cells without backticks and short rows', () => {
    expect(doc.artifactTrail).toEqual([
      { file: 'src/a|b.ts', status: 'modified', keyChange: 'split on | in names' },
      { file: 'src/services/gemini.ts', status: 'created', keyChange: 'client with `retry | backoff`' },
      { file: 'docs/notes.md', status: 'deleted', keyChange: '' },
    ]);
  });

  it('keeps sections the spec does not define, and ignores a title line', () => {
    expect(doc.extraSections).toEqual([{ heading: 'Notes', body: 'Keep an eye on API quota.' }]);
  });

  it('renders in the spec layout and reads back to the same model', () => {
    const text = renderHandoff(doc);
    expect(text).toContain('## Essential Information\n\n### Decisions\n- Platform: Web (browser)');
    expect(text).toContain('| `src/a\\|b.ts` | modified | split on \\| in names |');
    expect(parseHandoff(text)).toEqual(doc);
  });

  it('reads "None" under Artifact Trail as no rows, and a Play-By-Play item over several lines as one line', () => {
    const text = example
      .replace(/\| File \| Status[\s\S]*?\n\n### Current State/, 'None\n\n### Current State')
      .replace(
        '- Phase 2 → Integrated Gemini API with retry logic → Complete',
        '- Phase 2 → Integrated Gemini API\n  with retry logic → Complete',
      );
    const d = parseHandoff(text);
    expect(d.artifactTrail).toEqual([]);
    expect(d.playByPlay[1]).toEqual({ phase: 'Phase 2', action: 'Integrated Gemini API with retry logic', outcome: 'Complete' });
  });
});

describe('errors name what is wrong', () => {
  const sections: [string, RegExp][] = [
    ['Problem', /## Problem\n[^\n]*\n\n/],
    ['Session Intent', /## Session Intent\n[^\n]*\n\n/],
    ['Decisions', /### Decisions\n(?:- [^\n]*\n)+\n/],
    ['Technical Context', /### Technical Context\n(?:- [^\n]*\n)+\n/],
    ['Play-By-Play', /### Play-By-Play\n(?:- [^\n]*\n)+\n/],
    ['Artifact Trail', /### Artifact Trail\n\n(?:\|[^\n]*\n)+\n/],
    ['Current State', /### Current State\n(?:- [^\n]*\n)+\n/],
    ['Next Actions', /### Next Actions\n(?:- [^\n]*\n)+\n/],
  ];

  it.each(sections)('a missing %s section is checkpoint_schema_invalid naming it', (title, pattern) => {
    const text = example.replace(pattern, '');
    expect(text).not.toBe(example);
    const err = schemaError(() => parseHandoff(text, 'chk-003.md'));
    expect(err.message).toContain(`"${title}"`);
    expect(err.message).toContain('chk-003.md');
    expect(err.details.sections).toEqual([title]);
  });

  it('names every missing section at once', () => {
    const text = example.replace(sections[2]![1], '').replace(sections[7]![1], '');
    expect(schemaError(() => parseHandoff(text)).details.sections).toEqual(['Decisions', 'Next Actions']);
  });

  it('User Rules is optional', () => {
    const doc = parseHandoff(example.replace(/\n## User Rules\n[\s\S]*$/, '\n'));
    expect(doc.userRules).toBeUndefined();
  });

  it('an empty Problem, a repeated section, a broken table are named', () => {
    expect(schemaError(() => parseHandoff(example.replace('Build a paint-by-numbers game with AI-generated images.', ''))).message).toMatch(
      /"Problem" is empty/,
    );
    expect(schemaError(() => parseHandoff(`${example}\n### Decisions\n- again\n`)).message).toMatch(/"Decisions" appears more than once/);
    expect(
      schemaError(() => parseHandoff(example.replace('| `src/services/gemini.ts`', 'just some prose\n| `src/services/gemini.ts`'))).message,
    ).toMatch(/"Artifact Trail" must be a table/);
  });

  it('front matter: missing, unclosed, invalid YAML, missing or malformed fields', () => {
    const body = example.slice(example.indexOf('## Problem'));
    expect(schemaError(() => parseHandoff(body)).message).toMatch(/front matter .* is missing/);
    expect(schemaError(() => parseHandoff(`---\ncheckpoint: chk-1\n${body}`)).message).toMatch(/not closed/);
    expect(schemaError(() => parseHandoff(`---\ncheckpoint: [chk\n---\n${body}`)).message).toMatch(/not valid YAML/);
    expect(schemaError(() => parseHandoff(`---\ncreated: 2025-12-14T15:30:00Z\n---\n${body}`)).message).toMatch(/checkpoint/);
    expect(schemaError(() => parseHandoff(`---\ncheckpoint: chk-1\ncreated: yesterday\n---\n${body}`)).details.paths).toEqual(['/created']);
    expect(schemaError(() => parseHandoff(`---\n- a list\n---\n${body}`)).message).toMatch(/mapping/);
  });

  it('refuses to render text that would not read back', () => {
    const doc = parseHandoff(example);
    expect(schemaError(() => renderHandoff({ ...doc, problem: 'x\n```\nunclosed' })).message).toMatch(/never closed/);
    expect(schemaError(() => renderHandoff({ ...doc, problem: 'x\n## Sneaky' })).message).toMatch(/new section/);
    expect(schemaError(() => renderHandoff({ ...doc, playByPlay: [{ phase: 'a → b', action: 'c', outcome: 'd' }] })).message).toMatch(
      /arrow/,
    );
    expect(schemaError(() => renderHandoff({ ...doc, frontMatter: { created: 'x' } })).message).toMatch(/header field/);
    expect(schemaError(() => renderHandoff({ ...doc, extraSections: [{ heading: 'Decisions', body: '' }] })).message).toMatch(
      /cannot be written/,
    );
    expect(schemaError(() => renderHandoff({ ...doc, decisions: [''] } as HandoffDocument)).message).toMatch(/decisions/);
  });
});

describe('render ∘ parse (property)', () => {
  it('parseHandoff(renderHandoff(doc)) is doc for documents in normal form', () => {
    const validate = compileValidator(handoffDocumentJsonSchema);
    fc.assert(
      fc.property(handoffDocument, (doc) => {
        const text = renderHandoff(doc);
        const back = parseHandoff(text);
        expect(back).toEqual(doc);
        expect(validate(back)).toEqual([]);
        expect(parseHandoff(text.replace(/\n/g, '\r\n'))).toEqual(doc);
      }),
      { numRuns: 300 },
    );
  });

  it('rendering is a fixed point after one parse, also for text not in normal form', () => {
    fc.assert(
      fc.property(handoffDocument, fc.constantFrom('  ', '\t', '\n\n\n'), (doc, junk) => {
        const messy: HandoffDocument = {
          ...doc,
          problem: `${doc.problem}${junk}`,
          currentState: doc.currentState.map((s) => `${s}${junk === '\n\n\n' ? ' ' : junk}`),
        };
        const once = renderHandoff(messy);
        expect(renderHandoff(parseHandoff(once))).toBe(once);
      }),
      { numRuns: 100 },
    );
  });
});

describe('every read error has a stable reason code (property)', () => {
  const mutate = fc.array(fc.tuple(fc.constantFrom('delete', 'duplicate', 'swap', 'truncate', 'crlf'), fc.nat()), {
    minLength: 1,
    maxLength: 4,
  });

  it('parseHandoff on damaged documents returns a document or throws checkpoint_schema_invalid, nothing else', () => {
    fc.assert(
      fc.property(handoffDocument, mutate, (doc, edits) => {
        let lines = renderHandoff(doc).split('\n');
        for (const [op, n] of edits) {
          const i = lines.length === 0 ? 0 : n % lines.length;
          if (op === 'delete') lines.splice(i, 1);
          else if (op === 'duplicate') lines.splice(i, 0, lines[i] ?? '');
          else if (op === 'swap' && lines.length > 1)
            [lines[i], lines[(i + 1) % lines.length]] = [lines[(i + 1) % lines.length]!, lines[i]!];
          else if (op === 'truncate') lines = lines.slice(0, i);
          else lines[i] = `${lines[i] ?? ''}\r`;
        }
        try {
          parseHandoff(lines.join('\n'));
        } catch (err) {
          expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => {
        try {
          parseHandoff(`---\ncheckpoint: x\ncreated: 2025-01-01T00:00:00Z\n---\n${text}`);
          parseHandoff(text);
        } catch (err) {
          expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
