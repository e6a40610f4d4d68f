/**
 * One rule for times without an offset in all five profiles (`2026-01-15T14:30:00.123456` from
 * Python's `isoformat()` of a naive time, or with a space separator): liberal on read — read as
 * UTC, with the warning `checkpoint_time_without_offset` — and strict on write (savepoint writes `Z`).
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage, planResume, type Profile } from 'savepoint';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { planExecutor } from 'savepoint/plan-executor';
import { handoffMarkdown } from 'savepoint/handoff-markdown';
import { progressProtocol } from 'savepoint/progress-protocol';
import { foreignFixture, PHASED_RUN } from '../../support/foreign.js';
import { utf8Encode } from '../../../src/codec/utf8.js';

const NAIVE = '2026-01-15T14:30:00.123456';
const SPACED = '2026-01-15 14:30:00';

function json(profile: string, name: string, edit: (d: Record<string, unknown>) => void): Uint8Array {
  const doc = JSON.parse(foreignFixture(profile, name)) as Record<string, unknown>;
  edit(doc);
  return utf8Encode(JSON.stringify(doc));
}

interface Case {
  readonly profile: Profile<unknown>;
  readonly runId: string;
  readonly key: string;
  readonly bytes: (time: string) => Uint8Array;
}

const CASES: Record<string, Case> = {
  snapshotLifecycle: {
    profile: snapshotLifecycle as Profile<unknown>,
    runId: 'sess-2026-01-15-a',
    key: 'checkpoints/sess-2026-01-15-a/latest.json',
    bytes: (t) => json('snapshot-lifecycle', 'latest.spec.json', (d) => (d.created_at = t)),
  },
  phasedWorkflow: {
    profile: phasedWorkflow as Profile<unknown>,
    runId: PHASED_RUN,
    key: `checkpoints/${PHASED_RUN}/latest.json`,
    bytes: (t) => json('phased-workflow', 'latest.json', (d) => (d.timestamp = t)),
  },
  planExecutor: {
    profile: planExecutor as Profile<unknown>,
    runId: '02',
    key: planExecutor.layout.latestKey('02'),
    bytes: (t) => json('plan-executor', '02-CHECKPOINT.spec-example.json', (d) => (d.last_activity = t)),
  },
  handoffMarkdown: {
    profile: handoffMarkdown as Profile<unknown>,
    runId: 'chromatic-quest',
    key: 'checkpoints/chromatic-quest/latest.md',
    bytes: (t) => utf8Encode(foreignFixture('handoff-markdown', 'chk-003.spec-example.md').replace(/^created: .*$/m, `created: ${t}`)),
  },
  progressProtocol: {
    profile: progressProtocol as Profile<unknown>,
    runId: progressRun(),
    key: progressProtocol.layout.latestKey(progressRun()),
    bytes: (t) =>
      utf8Encode(
        foreignFixture('progress-protocol', 'ccc-progress.spec-template.md').replace(/^\*\*Session:\*\*.*$/m, `**Session:** ${t}`),
      ),
  },
};

function progressRun(): string {
  return 'default';
}

describe('a time without an offset is read as UTC, with a warning, in every profile', () => {
  for (const [name, c] of Object.entries(CASES)) {
    for (const time of [NAIVE, SPACED]) {
      it(`${name}: ${time} (regression)`, async () => {
        const storage = memoryStorage();
        await storage.put(c.key, c.bytes(time));
        const plan = await planResume({ storage, profile: c.profile, runId: c.runId });
        expect(plan.snapshot.createdAt.endsWith('Z')).toBe(true);
        expect(Date.parse(plan.snapshot.createdAt)).toBe(Date.UTC(2026, 0, 15, 14, 30, 0, time === NAIVE ? 123 : 0));
        expect(plan.warnings.map((w) => w.code)).toContain('checkpoint_time_without_offset');
      });
    }
  }
});
