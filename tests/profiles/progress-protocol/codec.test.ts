import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileValidator } from 'savepoint/toolkit';
import { isCheckpointError } from 'savepoint';
import {
  parseProgress,
  progressDocumentJsonSchema,
  readContinuationPrompt,
  renderProgress,
  type ProgressDocument,
} from 'savepoint/progress-protocol';
import { progressDocument } from './arbitraries.js';

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/progress/${name}`, import.meta.url), 'utf8');
const example = fixture('ccc-progress.md');

function schemaError(fn: () => unknown): Error & { details: Record<string, unknown> } {
  try {
    fn();
  } catch (err) {
    expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
    return err as Error & { details: Record<string, unknown> };
  }
  throw new Error('expected checkpoint_schema_invalid');
}

describe('.ccc-progress.md in the spec layout', () => {
  it('parses every section of the spec template', () => {
    const { document, meta } = parseProgress(example);
    expect(meta).toBeUndefined();
    expect(document).toEqual({
      issue: { id: 'CIA-123', title: 'Checkpoint protocol for long sessions' },
      session: '2025-12-14T15:30:00Z',
      executionMode: 'tdd',
      completedTasks: ['Write the progress file codec', 'Add the git snapshot step'],
      currentTask: { description: 'Tracker status upsert', status: 'Linear sink passing, GitHub sink in progress' },
      remainingTasks: ['Continuation prompt box', 'Stop hook entry'],
      decisions: [
        { decision: 'Upsert one comment', rationale: 'avoids a notification on every checkpoint' },
        { decision: 'Stage only activeTaskFiles', rationale: 'never sweep unrelated work into a commit' },
      ],
      blockers: [{ description: 'Need a token for the integration repo', unblockedBy: 'an admin grants issues:write' }],
      continuationPrompt:
        'Resume CIA-123. Current task: task 3 of 5 — Tracker status upsert. Key files: src/sinks/github.ts, tests/sinks.test.ts.\nNext action: make the PATCH update pass against the local server.',
    });
    expect(compileValidator(progressDocumentJsonSchema)(document)).toEqual([]);
  });

  it('renders back byte for byte', () => {
    expect(renderProgress(parseProgress(example).document)).toBe(example);
  });

  it('writes empty lists as "- None" and reads them back as empty', () => {
    const doc: ProgressDocument = {
      ...parseProgress(example).document,
      completedTasks: [],
      remainingTasks: [],
      decisions: [],
      blockers: [],
    };
    const { currentTask: _c, ...noCurrent } = doc;
    const text = renderProgress(noCurrent);
    expect(text).toContain(
      '## Completed Tasks\n- None\n\n## Current Task\n- None\n\n## Remaining Tasks\n- None\n\n## Decisions Made\n- None\n\n## Blockers\n- None\n',
    );
    expect(parseProgress(text).document).toEqual(noCurrent);
  });

  it('reads hand-written files: [x] and ✔ marks, * bullets, ## Decisions, a spaced hyphen, extra sections, CRLF', () => {
    const { document } = parseProgress(fixture('hand-written.md').replace(/\n/g, '\r\n'));
    expect(document).toEqual({
      issue: { id: '#42', title: 'Offline mode' },
      session: '2025-12-15 09:00',
      executionMode: 'quick',
      completedTasks: ['Service worker registered', 'Manifest added'],
      remainingTasks: ['Sync queue'],
      decisions: [{ decision: 'Cache in IndexedDB', rationale: '' }],
      blockers: [],
      continuationPrompt: 'Resume #42 with the sync queue.\n\n```sh\n# run the offline test suite\nnpm test -- offline\n```',
      extraSections: [{ heading: 'Notes', body: 'Ask about quota limits.' }],
    });
    expect(parseProgress(renderProgress(document)).document).toEqual(document);
  });

  it('names a missing Issue line or Continuation Prompt', () => {
    expect(schemaError(() => parseProgress(example.replace(/\*\*Issue:\*\*[^\n]*\n/, ''))).message).toMatch(/Issue/);
    const err = schemaError(() => parseProgress(example.replace(/## Continuation Prompt[\s\S]*$/, '')));
    expect(err.message).toMatch(/"Continuation Prompt"/);
    expect(err.details.sections).toEqual(['Continuation Prompt']);
    expect(schemaError(() => parseProgress(example.replace(/## Current Task\n- [^\n]*\n/, '## Current Task\n- a\n- b\n'))).message).toMatch(
      /more than one/,
    );
    expect(schemaError(() => parseProgress(`${example}\n## Blockers\n- again\n`)).message).toMatch(/more than once/);
  });

  it('missing list sections read as empty', () => {
    const { document } = parseProgress(
      example.replace(/## Remaining Tasks\n(?:- [^\n]*\n)+\n/, '').replace(/## Blockers\n(?:- [^\n]*\n)+\n/, ''),
    );
    expect(document.remainingTasks).toEqual([]);
    expect(document.blockers).toEqual([]);
  });

  it('refuses to render what would read back differently', () => {
    const doc = parseProgress(example).document;
    expect(schemaError(() => renderProgress({ ...doc, decisions: [{ decision: 'a: b', rationale: 'c' }] })).message).toMatch(/": "/);
    expect(schemaError(() => renderProgress({ ...doc, completedTasks: ['done ✓'] })).message).toMatch(/✓/);
    expect(schemaError(() => renderProgress({ ...doc, remainingTasks: ['None'] })).message).toMatch(/None/);
    expect(schemaError(() => renderProgress({ ...doc, continuationPrompt: 'x\n## Heading' })).message).toMatch(/new section/);
  });

  it('render ∘ parse is the identity on documents in normal form (property)', () => {
    fc.assert(
      fc.property(progressDocument, (doc) => {
        const text = renderProgress(doc);
        expect(parseProgress(text).document).toEqual(doc);
        expect(parseProgress(text.replace(/\n/g, '\r\n')).document).toEqual(doc);
        expect(readContinuationPrompt(text)).toBe(doc.continuationPrompt);
      }),
      { numRuns: 300 },
    );
  });

  it('readContinuationPrompt reads only that section, as /ccc:go does', () => {
    expect(readContinuationPrompt(example)).toMatch(/^Resume CIA-123\./);
    expect(readContinuationPrompt('# Session Progress\n\nno sections')).toBeUndefined();
    expect(readContinuationPrompt('## Continuation Prompt\n\n## Next')).toBeUndefined();
  });
});

describe('every read error has a stable reason code (property)', () => {
  it('parseProgress on arbitrary or damaged text returns a document or throws checkpoint_schema_invalid', () => {
    fc.assert(
      fc.property(
        progressDocument,
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.string({ unit: 'binary', maxLength: 200 }),
        (doc, deletions, junk) => {
          const lines = renderProgress(doc).split('\n');
          for (const n of deletions) lines.splice(n % Math.max(1, lines.length), 1);
          for (const text of [lines.join('\n'), junk, `**Issue:** X-1\n${junk}`, `<!-- savepoint: {${junk}} -->\n${lines.join('\n')}`]) {
            try {
              parseProgress(text);
            } catch (err) {
              expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
