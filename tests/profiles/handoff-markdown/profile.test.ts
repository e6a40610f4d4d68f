import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileValidator, gzip, type SnapshotDraft } from 'savepoint/toolkit';
import { isCheckpointError } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import {
  handoffLayout,
  handoffMarkdown,
  handoffMarkdownProfile,
  handoffResumeRule,
  parseHandoff,
  storedHandoffJsonSchema,
  type HandoffDocument,
  type HandoffPayload,
} from 'savepoint/handoff-markdown';
import { handoffDocument } from './arbitraries.js';

const LATEST = 'checkpoints/chromatic-quest/latest.md';
const example = parseHandoff(readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8'));

function payloadOf(doc: HandoffDocument): HandoffPayload {
  const { checkpoint: _c, created: _d, frontMatter: _f, ...payload } = doc;
  return payload;
}

function draft(payload: HandoffPayload, sequence = 3, extra: Partial<SnapshotDraft<HandoffPayload>> = {}): SnapshotDraft<HandoffPayload> {
  return {
    id: `chk-${String(sequence).padStart(3, '0')}`,
    runId: 'chromatic-quest',
    sequence,
    createdAt: '2025-12-14T15:30:00.000Z',
    source: 'phase_completion',
    sourceDetails: [],
    status: 'in_progress',
    payload,
    ...extra,
  };
}

async function decodeError(bytes: Uint8Array): Promise<unknown> {
  try {
    await handoffMarkdown.document.decode(bytes, 'checkpoints/chromatic-quest/chk-003.md');
  } catch (err) {
    return err;
  }
  throw new Error('decode succeeded');
}

describe('handoffMarkdown document format', () => {
  it("writes the spec document with savepoint's one seal line in the front matter", async () => {
    const { bytes, snapshot } = await handoffMarkdown.document.encode(draft(payloadOf(example)));
    const text = utf8Decode(bytes);
    expect(text).toMatch(
      /^---\ncheckpoint: chk-003\ncreated: 2025-12-14T15:30:00.000Z\nanchor: end-of-phase-2\nsavepoint: 1\.0 3 phase_completion in_progress [A-Za-z0-9_-]{43}\n---\n\n## Problem\n/,
    );
    // the body is exactly the spec example's
    expect(text.slice(text.indexOf('## Problem'))).toBe(
      readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8').split('---\n\n')[1],
    );
    // a reader of the spec reads it as a hand-off document
    const asSpec = parseHandoff(text);
    expect(asSpec.checkpoint).toBe('chk-003');
    expect(payloadOf(asSpec)).toEqual(payloadOf(example));
    expect(compileValidator(storedHandoffJsonSchema)(asSpec)).toEqual([]);
    expect(snapshot.integrity.checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it('encode then decode is the identity, and the document validates (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        handoffDocument,
        fc.integer({ min: 1, max: 5000 }),
        fc.constantFrom('in_progress', 'paused', 'completed', 'failed'),
        async (doc, seq, status) => {
          const d = draft(payloadOf(doc), seq, {
            status,
            sourceDetails: seq % 2 === 0 ? [{ source: 'major_decision', at: '2025-12-14T15:30:01.000Z' }] : [],
            ...(seq % 3 === 0 ? { priority: 'high' as const } : {}),
          });
          const { bytes, snapshot } = await handoffMarkdown.document.encode(d);
          const back = await handoffMarkdown.document.decode(bytes, LATEST);
          expect(back).toEqual(snapshot);
          expect({ ...back, integrity: undefined }).toEqual({ ...d, integrity: undefined });
          // gzip (retention's history compression) and CRLF line endings are transparent
          expect(await handoffMarkdown.document.decode(gzip(bytes), 'checkpoints/chromatic-quest/chk-001.md.gz')).toEqual(snapshot);
          expect(await handoffMarkdown.document.decode(utf8Encode(utf8Decode(bytes).replace(/\n/g, '\r\n')), LATEST)).toEqual(snapshot);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('stores payload text in normal form, so what it returns is what a reader gets back', async () => {
    const messy = { ...payloadOf(example), problem: 'Build a game.   \n\n\n\nOffline too.  ' };
    const { bytes, snapshot } = await handoffMarkdown.document.encode(draft(messy));
    expect(snapshot.payload.problem).toBe('Build a game.\n\nOffline too.');
    expect((await handoffMarkdown.document.decode(bytes, LATEST)).payload).toEqual(snapshot.payload);
  });

  it('detects hand edits of content but not line-ending or blank-line changes', async () => {
    const { bytes } = await handoffMarkdown.document.encode(draft(payloadOf(example)));
    const text = utf8Decode(bytes);
    const edits = [
      text.replace('Gemini client with exponential backoff', 'Gemini client with linear backoff'),
      text.replace('- Blocked: None', '- Blocked: API key'),
      text.replace(' phase_completion in_progress ', ' phase_completion completed '),
      text.replace('savepoint: 1.0 3 ', 'savepoint: 1.0 4 '),
      text.replace(' phase_completion in_progress ', ' major_decision in_progress '),
      text.replace('- Game name: Chromatic Quest\n', ''),
      text.replace('anchor: end-of-phase-2', 'anchor: end-of-phase-3'),
    ];
    for (const edited of edits) {
      expect(edited).not.toBe(text);
      const err = await decodeError(utf8Encode(edited));
      expect(isCheckpointError(err, 'checkpoint_integrity_mismatch')).toBe(true);
    }
    for (const harmless of [
      text.replace(/\n/g, '\r\n'),
      text.replace('## Session Intent', '\n\n## Session Intent'),
      text.replace(/savepoint: (.*)/, 'savepoint: "$1"'),
    ]) {
      await expect(handoffMarkdown.document.decode(utf8Encode(harmless), LATEST)).resolves.toMatchObject({ id: 'chk-003' });
    }
  });

  it('rejects a document without savepoint fields, and a payload that does not match, with checkpoint_schema_invalid', async () => {
    const plain = readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url));
    const err = await decodeError(plain);
    expect(isCheckpointError(err, 'checkpoint_schema_invalid')).toBe(true);
    expect((err as Error).message).toMatch(/no savepoint seal line/);
    await expect(handoffMarkdown.document.encode(draft({ ...payloadOf(example), nextActions: 'x' } as never))).rejects.toThrow(
      /checkpoint_schema_invalid/,
    );
    const missing = await decodeError(
      utf8Encode(
        utf8Decode((await handoffMarkdown.document.encode(draft(payloadOf(example)))).bytes).replace(/### Next Actions[\s\S]*?\n\n/, ''),
      ),
    );
    expect(isCheckpointError(missing, 'checkpoint_schema_invalid')).toBe(true);
    expect((missing as Error).message).toContain('"Next Actions"');
  });
});

describe('handoffMarkdown profile', () => {
  it('declares the spec triggers, chk-NNN ids and no heartbeat', () => {
    expect(Object.keys(handoffMarkdown.triggers)).toEqual([
      'phase_completion',
      'major_decision',
      'context_shift',
      'session_break',
      'pre_compression',
    ]);
    expect(handoffMarkdown.newSnapshotId({ runId: 'r', sequence: 7, source: 'session_break', createdAtMs: 0 })).toBe('chk-007');
    expect(handoffMarkdown.newSnapshotId({ runId: 'r', sequence: 1234, source: 'session_break', createdAtMs: 0 })).toBe('chk-1234');
    expect(handoffMarkdown.heartbeat).toBe(false);
    expect(handoffMarkdown.document.extension).toBe('.md');
    expect(handoffMarkdown.onOversize).toBe('reject');
    expect(() => handoffMarkdown.trigger('timer')).toThrow(/checkpoint_schema_invalid/);
  });

  it('lays out chk-NNN.md per run plus latest.md, and classifies them back', () => {
    const layout = handoffMarkdown.layout;
    const ref = { runId: 'quest', id: 'chk-003', sequence: 3, source: 'phase_completion' };
    expect(layout.latestKey('quest')).toBe('checkpoints/quest/latest.md');
    expect(layout.historyKey!(ref)).toBe('checkpoints/quest/chk-003.md');
    expect(layout.indexKey).toBeUndefined();
    expect(layout.classify('checkpoints/quest/chk-003.md')).toEqual({
      kind: 'history',
      runId: 'quest',
      sequence: 3,
      snapshotId: 'chk-003',
      compressed: false,
    });
    expect(layout.classify('checkpoints/quest/chk-003.md.gz')).toMatchObject({ kind: 'history', sequence: 3, compressed: true });
    expect(layout.classify('checkpoints/quest/latest.md')).toEqual({ kind: 'latest', runId: 'quest', compressed: false });
    expect(layout.classify('checkpoints/quest/notes.md')).toBeUndefined();
    const custom = handoffMarkdownProfile({ root: 'handoffs', idPrefix: 'session-abc' });
    expect(custom.layout.historyKey!({ ...ref, sequence: 12 })).toBe('handoffs/quest/session-abc-012.md');
    expect(custom.newSnapshotId({ runId: 'r', sequence: 12, source: 'session_break', createdAtMs: 0 })).toBe('session-abc-012');
    expect(custom.layout.classify('handoffs/quest/session-abc-012.md')).toMatchObject({ sequence: 12 });
    expect(() => handoffLayout({ idPrefix: '../x' })).toThrow(/checkpoint_config_invalid/);
  });
});

describe('resume rule: Next Actions is the resume point', () => {
  const snapshot = async (payload: HandoffPayload, status = 'in_progress') =>
    (await handoffMarkdown.document.encode(draft(payload, 3, { status }))).snapshot;

  it('resumes at the first Next Action with a continuation prompt built from Next Actions', async () => {
    const point = handoffResumeRule(await snapshot(payloadOf(example)), { now: 0, isTerminal: handoffMarkdown.isTerminal });
    expect(point).toMatchObject({
      at: 'Phase 3: Implement game mechanics (timer, scoring, combos)',
      reason: 'next_action',
      eligible: true,
      completed: [
        'Phase 1 → Implemented core canvas + color quantization → Complete',
        'Phase 2 → Integrated Gemini API with retry logic → Complete',
      ],
      remaining: ['Phase 3: Implement game mechanics (timer, scoring, combos)'],
    });
    expect(point.continuationPrompt).toBe(
      'Continue from hand-off checkpoint chk-003 (end-of-phase-2).\nNext actions:\n- Phase 3: Implement game mechanics (timer, scoring, combos)\n- Blocked: None',
    );
    const restored = point.restored as { markdown: string; document: HandoffDocument };
    expect(parseHandoff(restored.markdown)).toEqual(restored.document);
    expect(restored.document.checkpoint).toBe('chk-003');
  });

  it('an active blocker, no next actions or a terminal status make the run ineligible', async () => {
    const blocked = handoffResumeRule(
      await snapshot({ ...payloadOf(example), nextActions: ['Phase 3: mechanics', 'Blocked: waiting for the API key'] }),
      { now: 0 },
    );
    expect(blocked).toMatchObject({ reason: 'blocked', eligible: false, at: 'Phase 3: mechanics' });
    const none = handoffResumeRule(await snapshot({ ...payloadOf(example), nextActions: ['Blocked: None'] }), { now: 0 });
    expect(none).toMatchObject({ reason: 'no_next_actions', eligible: false, at: 'done' });
    const done = handoffResumeRule(await snapshot(payloadOf(example), 'completed'), { now: 0, isTerminal: handoffMarkdown.isTerminal });
    expect(done).toMatchObject({ reason: 'run_completed', eligible: false });
  });
});

describe('damaged stored documents (property)', () => {
  it('a flipped byte is read back unchanged or rejected with a stable reason code, never silently changed', async () => {
    const { bytes, snapshot } = await handoffMarkdown.document.encode(draft(payloadOf(example)));
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, xor) => {
        const damaged = bytes.slice();
        damaged[at] = damaged[at]! ^ xor;
        try {
          expect(await handoffMarkdown.document.decode(damaged, LATEST)).toEqual(snapshot);
        } catch (err) {
          expect(['checkpoint_schema_invalid', 'checkpoint_integrity_mismatch']).toContain((err as { reasonCode?: string }).reasonCode);
        }
      }),
      { numRuns: 300 },
    );
  });
});
