/**
 * Markdown profiles reading what other tools write: each "measured" defect, as a user met it. Only APIs that
 * existed before the fix are used, so every test here fails on the old code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriter, findIncompleteRuns, memoryStorage, planResume } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { fsStorage } from 'savepoint/fs';
import {
  compress,
  estimateTokens,
  handoffMarkdown,
  parseHandoff,
  renderHandoff,
  type HandoffDocument,
  type HandoffPayload,
} from 'savepoint/handoff-markdown';
import { parseProgress, progressProtocol } from 'savepoint/progress-protocol';
import { runCli } from '../../../src/cli/run.js';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { captureIo } from '../../support/cli-io.js';
import { foreignFixture, putFixtures } from '../../support/foreign.js';

const clock = manualClock('2026-01-15T15:00:00Z');
const HANDOFF = 'checkpoints/chromatic-quest/latest.md';
const PROGRESS = 'progress/CIA-123/.ccc-progress.md';
const codes = (plan: { warnings: readonly { code: string }[] }): string[] => plan.warnings.map((w) => w.code);
const payloadOf = ({ checkpoint: _c, created: _d, frontMatter: _f, ...payload }: HandoffDocument): HandoffPayload => payload;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function cli(args: string[]): Promise<{ code: number; out: string }> {
  const io = captureIo();
  const code = await runCli(args, io);
  return { code, out: io.out };
}

describe('Markdown profiles: what other tools write is resumable', () => {
  for (const [name, profile, runId, key, fixture] of [
    [
      "handoff-markdown.md's own chk-003 example verbatim",
      handoffMarkdown,
      'chromatic-quest',
      HANDOFF,
      ['handoff-markdown', 'chk-003.spec-example.md'],
    ],
    [
      "a .ccc-progress.md without savepoint's metadata line",
      progressProtocol,
      'CIA-123',
      PROGRESS,
      ['progress-protocol', 'ccc-progress.tool.md'],
    ],
  ] as const) {
    it(`${name}: planResume resumes it, findIncompleteRuns lists it, verify calls it unsealed (not corrupt)`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'savepoint-md-regression-'));
      dirs.push(dir);
      const storage = fsStorage({ dir });
      await putFixtures(storage, fixture[0], { [key]: fixture[1] });
      const plan = await planResume({ storage, profile: profile as never, runId, clock });
      expect(codes(plan)).toContain('checkpoint_unsealed');
      expect((await findIncompleteRuns({ storage, profile: profile as never })).map((r) => r.runId)).toEqual([runId]);
      await storage.close();
      const verify = await cli(['verify', '--json', '--profile', profile.name, '--dir', dir]);
      expect(verify.code).toBe(0);
      expect((JSON.parse(verify.out) as { problems: number }).problems).toBe(0);
    });
  }

  it("after the protocol's own tool rewrites .ccc-progress.md, savepoint still resumes the run", async () => {
    const storage = memoryStorage();
    const { document: payload } = parseProgress(foreignFixture('progress-protocol', 'ccc-progress.tool.md'));
    const writer = createWriter({ storage, profile: progressProtocol, runId: 'CIA-123', clock });
    expect((await writer.checkpoint({ source: 'gate_boundary', status: 'in_progress', payload })).ok).toBe(true);
    await writer.close();
    const ours = utf8Decode((await storage.get(PROGRESS))!.bytes);
    await storage.put(
      PROGRESS,
      utf8Encode(
        ours
          .split('\n')
          .filter((l) => !l.startsWith('<!-- savepoint:'))
          .join('\n')
          .replace('Linear sink passing', 'both sinks passing'),
      ),
    );
    const resumed = await planResume({ storage, profile: progressProtocol, runId: 'CIA-123', clock });
    expect(resumed.payload.currentTask?.status).toBe('both sinks passing, GitHub sink in progress');
  });

  it('a hand-edited latest.md is resumed from, with checkpoint_integrity_mismatch: the edit is not lost to an older hand-off', async () => {
    const storage = memoryStorage();
    const example = parseHandoff(foreignFixture('handoff-markdown', 'chk-003.spec-example.md'));
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'chromatic-quest', clock });
    await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload: payloadOf(example) });
    await writer.close();
    const text = utf8Decode((await storage.get(HANDOFF))!.bytes);
    await storage.put(HANDOFF, utf8Encode(text.replace('- Blocked: None', '- Phase 4: offline mode\n- Blocked: None')));
    const plan = await planResume({ storage, profile: handoffMarkdown, runId: 'chromatic-quest', clock });
    expect(plan.source.key).toBe(HANDOFF);
    expect(codes(plan)).toContain('checkpoint_integrity_mismatch');
    expect(plan.payload.nextActions).toContain('Phase 4: offline mode');
  });

  it('both Markdown profiles have an import: `savepoint import` seals their runs', async () => {
    for (const [profile, fixture, key] of [
      ['handoffMarkdown', ['handoff-markdown', 'chk-003.spec-example.md'], HANDOFF],
      ['progressProtocol', ['progress-protocol', 'ccc-progress.tool.md'], PROGRESS],
    ] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'savepoint-md-regression-'));
      dirs.push(dir);
      const storage = fsStorage({ dir });
      await putFixtures(storage, fixture[0], { [key]: fixture[1] });
      await storage.close();
      const res = await cli(['import', '--profile', profile, '--dir', dir, '--apply', '--json']);
      expect(res.code).toBe(0);
      expect((JSON.parse(res.out) as { changes: number }).changes).toBe(1);
    }
  });

  it('a hand-off compressed to 700 tokens is stored in at most 700 tokens, front matter included (it was 749)', async () => {
    const example = parseHandoff(foreignFixture('handoff-markdown', 'chk-003.spec-example.md'));
    // The largest hand-off that renders within 700 tokens by itself: compress() used to return it as is.
    const withEntries = (n: number): HandoffDocument => ({
      ...example,
      playByPlay: Array.from({ length: n }, (_, i) => ({
        phase: `Phase ${i + 1}`,
        action: `Implemented part ${i + 1} of the loop`,
        outcome: 'Complete',
      })),
    });
    let n = 0;
    while (estimateTokens(renderHandoff(withEntries(n + 1))) <= 700) n++;
    const long = withEntries(n);
    expect(estimateTokens(renderHandoff(long))).toBeGreaterThan(680);
    const storage = memoryStorage();
    const { document } = compress(long, { maxTokens: 700 });
    const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'chromatic-quest', clock });
    expect((await writer.checkpoint({ source: 'pre_compression', status: 'in_progress', payload: payloadOf(document) })).ok).toBe(true);
    await writer.close();
    expect(estimateTokens(utf8Decode((await storage.get(HANDOFF))!.bytes))).toBeLessThanOrEqual(700);
  });
});
