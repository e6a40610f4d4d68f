import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeStoredSnapshot } from 'savepoint/toolkit';
import { memoryStorage } from 'savepoint';
import { handoffMarkdown, parseHandoff, type HandoffDocument, type HandoffPayload } from 'savepoint/handoff-markdown';

describe('the shared read path', () => {
  it('never mistakes a Markdown document that mentions the part marker for a split JSON document', async () => {
    const example = parseHandoff(readFileSync(new URL('../fixtures/handoff/chk-003.md', import.meta.url), 'utf8'));
    const { checkpoint: _c, created: _d, frontMatter: _f, ...payload } = example as HandoffDocument;
    const mention = {
      ...payload,
      problem: 'Explain why a document holding {"$savepoint_part": {"key": "x"}} and "$savepoint_parts" is split.',
    } as HandoffPayload;
    const { bytes, snapshot } = await handoffMarkdown.document.encode({
      id: 'chk-001',
      runId: 'r',
      sequence: 1,
      createdAt: '2025-12-14T15:30:00.000Z',
      source: 'phase_completion',
      sourceDetails: [],
      status: 'in_progress',
      payload: mention,
    });
    const back = await decodeStoredSnapshot(memoryStorage(), handoffMarkdown, 'checkpoints/r/chk-001.md', bytes);
    expect(back).toEqual(snapshot);
    expect((back.payload as HandoffPayload).problem).toContain('$savepoint_part');
  });
});
