import { canonicalJson } from '../../codec/canonical-json.js';
import type { Snapshot } from '../../contract/snapshot.js';
import type { ResumeCallerContext, ResumeWarning } from '../../contract/resume-rule.js';

/** How many lessons `now` has that `before` lacks, and the reverse, compared as multisets of their canonical JSON. */
export function lessonsDiff(before: readonly unknown[], now: readonly unknown[]): { added: number; removed: number } {
  const count = (items: readonly unknown[]): Map<string, number> => {
    const m = new Map<string, number>();
    for (const item of items) {
      let key: string;
      try {
        key = canonicalJson(item);
      } catch {
        key = String(item);
      }
      m.set(key, (m.get(key) ?? 0) + 1);
    }
    return m;
  };
  const a = count(before);
  const b = count(now);
  let added = 0;
  let removed = 0;
  for (const [k, n] of b) added += Math.max(0, n - (a.get(k) ?? 0));
  for (const [k, n] of a) removed += Math.max(0, n - (b.get(k) ?? 0));
  return { added, removed };
}

/** The lessons a phased-workflow snapshot records as active (`state_snapshot.active_lessons`; none when absent). */
export function activeLessonsOf(state: { readonly active_lessons?: readonly unknown[] }): readonly unknown[] {
  return Array.isArray(state.active_lessons) ? state.active_lessons : [];
}

/**
 * phased-workflow-github.md lesson_changes: `resume_lessons_changed` when the caller's
 * `currentLessons` (given to `planResume`) differ from the lessons active at the checkpoint.
 */
export function lessonsChangedWarnings(
  snapshot: Snapshot<{ readonly state_snapshot: { readonly active_lessons?: readonly unknown[] } }>,
  caller: ResumeCallerContext,
): readonly ResumeWarning[] {
  const current = caller.currentLessons as readonly unknown[] | undefined;
  if (current === undefined) return [];
  const { added, removed } = lessonsDiff(activeLessonsOf(snapshot.payload.state_snapshot), current);
  if (added === 0 && removed === 0) return [];
  return [
    {
      code: 'resume_lessons_changed',
      message: `active lessons changed since the checkpoint (${added} added, ${removed} removed); behaviour may differ`,
      details: { added, removed },
    },
  ];
}
