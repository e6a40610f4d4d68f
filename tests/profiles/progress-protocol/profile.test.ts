import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gzip, type SnapshotDraft } from 'savepoint/toolkit';
import { isCheckpointError } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import {
  parseProgress,
  progressLayout,
  progressProtocol,
  progressProtocolProfile,
  progressResumeRule,
  readContinuationPrompt,
  type ProgressDocument,
} from 'savepoint/progress-protocol';
import { progressDocument } from './arbitraries.js';

const example = parseProgress(readFileSync(new URL('../../fixtures/progress/ccc-progress.md', import.meta.url), 'utf8')).document;

function draft(payload: ProgressDocument, sequence = 1, status = 'in_progress'): SnapshotDraft<ProgressDocument> {
  return {
    id: 'cp_20251214T153000000Z_abcdefghij',
    runId: 'CIA-123',
    sequence,
    createdAt: '2025-12-14T15:30:00.000Z',
    source: 'handoff_request',
    sourceDetails: [],
    status,
    payload,
  };
}

describe('progressProtocol document format', () => {
  it('keeps the spec layout and adds one metadata comment under the title', async () => {
    const { bytes } = await progressProtocol.document.encode(draft(example));
    const text = utf8Decode(bytes);
    const lines = text.split('\n');
    expect(lines[0]).toBe('# Session Progress');
    expect(lines[1]).toMatch(
      /^<!-- savepoint: \{"created_at":"2025-12-14T15:30:00.000Z","integrity":\{"algorithm":"sha256","checksum":"[0-9a-f]{64}","format_version":"1.0"\},"run_id":"CIA-123",.*\} -->$/,
    );
    // without that line it is the spec file, byte for byte
    expect([lines[0], ...lines.slice(2)].join('\n')).toBe(
      readFileSync(new URL('../../fixtures/progress/ccc-progress.md', import.meta.url), 'utf8'),
    );
    // /ccc:go still finds its prompt
    expect(readContinuationPrompt(text)).toBe(example.continuationPrompt);
  });

  it('encode then decode is the identity; gzip and CRLF are transparent (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        progressDocument,
        fc.integer({ min: 1, max: 10_000 }),
        fc.constantFrom('in_progress', 'blocked', 'resuming', 'completed'),
        async (doc, seq, status) => {
          const { bytes, snapshot } = await progressProtocol.document.encode(draft(doc, seq, status));
          expect(await progressProtocol.document.decode(bytes, 'x')).toEqual(snapshot);
          expect(snapshot.payload).toEqual(doc);
          expect(await progressProtocol.document.decode(gzip(bytes), 'x')).toEqual(snapshot);
          expect(await progressProtocol.document.decode(utf8Encode(utf8Decode(bytes).replace(/\n/g, '\r\n')), 'x')).toEqual(snapshot);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('detects edits of content and metadata; refuses a file savepoint did not write', async () => {
    const { bytes } = await progressProtocol.document.encode(draft(example));
    const text = utf8Decode(bytes);
    for (const edited of [
      text.replace('Stop hook entry', 'Stop hook entries'),
      text.replace('"sequence":1', '"sequence":2'),
      text.replace('exec:tdd', 'exec:quick'),
    ]) {
      expect(edited).not.toBe(text);
      await expect(progressProtocol.document.decode(utf8Encode(edited), 'x')).rejects.toSatisfy((e: unknown) =>
        isCheckpointError(e, 'checkpoint_integrity_mismatch'),
      );
    }
    await expect(
      progressProtocol.document.decode(readFileSync(new URL('../../fixtures/progress/ccc-progress.md', import.meta.url)), 'x'),
    ).rejects.toSatisfy((e: unknown) => isCheckpointError(e, 'checkpoint_schema_invalid') && /metadata/.test((e as Error).message));
  });
});

describe('progressProtocol profile', () => {
  it('one artifact per run, updated in place: no history, no index', () => {
    const layout = progressProtocol.layout;
    expect(layout.latestKey('CIA-123')).toBe('progress/CIA-123/.ccc-progress.md');
    expect(layout.historyKey).toBeUndefined();
    expect(layout.indexKey).toBeUndefined();
    expect(layout.classify('progress/CIA-123/.ccc-progress.md')).toEqual({ kind: 'latest', runId: 'CIA-123', compressed: false });
    expect(layout.classify('progress/CIA-123/.savepoint-lock.json')).toEqual({ kind: 'lock', runId: 'CIA-123', compressed: false });
    expect(layout.classify('progress/CIA-123/other.md')).toBeUndefined();
    expect(() => layout.latestKey('../x')).toThrow(/checkpoint_key_invalid/);
  });

  it('a project layout maps one run to .ccc-progress.md at the store root', () => {
    const layout = progressLayout({ projectRunId: 'CIA-123' });
    expect(layout.latestKey('CIA-123')).toBe('.ccc-progress.md');
    expect(layout.classify('.ccc-progress.md')).toEqual({ kind: 'latest', runId: 'CIA-123', compressed: false });
    expect(layout.classify('src/.ccc-progress.md')).toBeUndefined();
    expect(() => layout.latestKey('CIA-124')).toThrow(/checkpoint_key_invalid/);
  });

  it('declares the triggers and statuses, and the session timestamp is not material', () => {
    expect(Object.keys(progressProtocol.triggers)).toEqual(['handoff_request', 'session_split', 'context_threshold', 'gate_boundary']);
    expect(progressProtocol.statuses.all).toEqual(['in_progress', 'blocked', 'resuming', 'completed']);
    expect(progressProtocol.isTerminal('completed')).toBe(true);
    expect(progressProtocol.materialView({ ...example, session: 'a' })).toEqual(
      progressProtocol.materialView({ ...example, session: 'b' }),
    );
    expect(progressProtocolProfile({ root: 'work' }).layout.latestKey('r')).toBe('work/r/.ccc-progress.md');
  });

  it('resumes at the current task with the Continuation Prompt; blockers stop automatic resume', async () => {
    const unblocked = { ...example, blockers: [] };
    const point = progressResumeRule((await progressProtocol.document.encode(draft(unblocked))).snapshot, {
      now: 0,
      isTerminal: progressProtocol.isTerminal,
    });
    expect(point).toMatchObject({
      at: 'Tracker status upsert',
      reason: 'continue_current_task',
      eligible: true,
      completed: ['Write the progress file codec', 'Add the git snapshot step'],
      remaining: ['Tracker status upsert', 'Continuation prompt box', 'Stop hook entry'],
      continuationPrompt: example.continuationPrompt,
    });
    expect(point.explanation).toMatch(/task 3 of 5/);
    const blocked = progressResumeRule((await progressProtocol.document.encode(draft(example))).snapshot, { now: 0 });
    expect(blocked).toMatchObject({ reason: 'blocked', eligible: false });
    const { currentTask: _c, ...noCurrent } = unblocked;
    expect(progressResumeRule((await progressProtocol.document.encode(draft(noCurrent))).snapshot, { now: 0 })).toMatchObject({
      at: 'Continuation prompt box',
      reason: 'next_task',
      eligible: true,
    });
    expect(
      progressResumeRule((await progressProtocol.document.encode(draft(unblocked, 1, 'completed'))).snapshot, { now: 0 }),
    ).toMatchObject({ reason: 'run_completed', eligible: false });
  });
});

describe('damaged stored progress files (property)', () => {
  it('a flipped byte is read back unchanged or rejected with a stable reason code, never silently changed', async () => {
    const { bytes, snapshot } = await progressProtocol.document.encode(draft(example));
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, xor) => {
        const damaged = bytes.slice();
        damaged[at] = damaged[at]! ^ xor;
        try {
          expect(await progressProtocol.document.decode(damaged, 'x')).toEqual(snapshot);
        } catch (err) {
          expect(['checkpoint_schema_invalid', 'checkpoint_integrity_mismatch']).toContain((err as { reasonCode?: string }).reasonCode);
        }
      }),
      { numRuns: 300 },
    );
  });
});
