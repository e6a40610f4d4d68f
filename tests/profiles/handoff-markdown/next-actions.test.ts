/**
 * handoff-markdown.md's Next Actions ("What comes next - pending work, blockers") as people write
 * them: task-list checkboxes, `None`, and blockers with a checkbox. A blocker blocks however it is
 * written, `None` is no work, and `at` never carries the checkbox.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Snapshot } from 'savepoint';
import { handoffMarkdown, handoffResumeRule, parseHandoff, type HandoffPayload } from 'savepoint/handoff-markdown';

const text = readFileSync(new URL('../../fixtures/handoff/chk-003.md', import.meta.url), 'utf8');
const SPEC_NEXT = '- Phase 3: Implement game mechanics (timer, scoring, combos)\n- Blocked: None';

/** The rule's answer for the spec's example hand-off with Next Actions replaced by `lines`. */
function resumeWith(lines: string) {
  expect(text).toContain(SPEC_NEXT);
  const { checkpoint: _c, created: _d, frontMatter: _f, ...payload } = parseHandoff(text.replace(SPEC_NEXT, lines));
  const snapshot: Snapshot<HandoffPayload> = {
    id: 'chk-003',
    runId: 'chromatic-quest',
    sequence: 3,
    createdAt: '2025-12-14T15:30:00.000Z',
    source: 'phase_completion',
    sourceDetails: [],
    status: 'in_progress',
    payload,
    integrity: { format_version: '1.0', algorithm: 'sha256', checksum: '0'.repeat(64) },
  };
  return handoffResumeRule(snapshot, { now: 0, isTerminal: handoffMarkdown.isTerminal });
}

describe('handoffResumeRule reads Next Actions as written', () => {
  it('`- [ ] Blocked: waiting for API key` blocks like `- Blocked:` (regression)', () => {
    const point = resumeWith('- [ ] Phase 3: mechanics\n- [ ] Blocked: waiting for API key');
    expect(point).toMatchObject({ eligible: false, reason: 'blocked', at: 'Phase 3: mechanics' });
  });

  it('`- None` is no next action, never `at: "None"` (regression)', () => {
    expect(resumeWith('- None')).toMatchObject({ eligible: false, reason: 'no_next_actions', at: 'done' });
    expect(resumeWith('- None.\n- Blocked: None')).toMatchObject({ eligible: false, reason: 'no_next_actions' });
  });

  it('checkboxes do not stay in `at`; ticked items are done (regression)', () => {
    const point = resumeWith('- [x] Phase 2: API\n- [ ] Phase 3: Implement game mechanics\n- [ ] Phase 4: Offline');
    expect(point).toMatchObject({ eligible: true, reason: 'next_action', at: 'Phase 3: Implement game mechanics' });
    expect(point.remaining).toEqual(['Phase 3: Implement game mechanics', 'Phase 4: Offline']);
  });

  it('a ticked blocker is cleared', () => {
    expect(resumeWith('- [ ] Phase 3: mechanics\n- [x] Blocked: waiting for API key')).toMatchObject({
      eligible: true,
      at: 'Phase 3: mechanics',
    });
  });
});
