import type { ProgressDocument } from './model.js';
import type { ProgressStatus } from './profile.js';
import { assertObjectArgument, assertOptionsArgument, assertStringArgument } from '../../contract/arguments.js';
import { assertProgressDocArgument } from './doc-argument.js';

/** How each status reads in the comment (progress-protocol.md: In Progress / Blocked / Resuming). */
export const STATUS_LABELS: Readonly<Record<ProgressStatus, string>> = {
  in_progress: 'In Progress',
  blocked: 'Blocked',
  resuming: 'Resuming',
  completed: 'Completed',
};

/** The fields of the "Checkpoint Status" comment. */
export interface StatusCommentFields {
  /** `**Updated:**` timestamp. */
  readonly updated: string;
  /** `**Task:** [N] of [M] — [task description]`. */
  readonly taskNumber: number;
  readonly taskCount: number;
  readonly task: string;
  /** `**Status:**`. */
  readonly status: ProgressStatus;
  /** `**Decisions:**` — key decisions since the last checkpoint, or "None". */
  readonly decisions: string;
  /** `**Blockers:**` — active blockers, or "None". */
  readonly blockers: string;
  /** `**Next:**` — the specific next action. */
  readonly next: string;
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/** The comment body exactly in the spec's format. */
export function renderStatusComment(f: StatusCommentFields): string {
  assertObjectArgument(f, 'renderStatusComment', 'fields');
  for (const field of ['updated', 'task', 'status', 'decisions', 'blockers'] as const)
    assertStringArgument(f[field], 'renderStatusComment', field);
  return [
    '## Checkpoint Status',
    '',
    `**Updated:** ${oneLine(f.updated)}`,
    `**Task:** ${f.taskNumber} of ${f.taskCount} — ${oneLine(f.task)}`,
    `**Status:** ${STATUS_LABELS[f.status]}`,
    '',
    `**Decisions:** ${oneLine(f.decisions) || 'None'}`,
    `**Blockers:** ${oneLine(f.blockers) || 'None'}`,
    `**Next:** ${oneLine(f.next) || 'None'}`,
  ].join('\n');
}

/** Task N of M and its description: N counts the completed tasks plus the current one; M every task. */
export function taskPosition(doc: ProgressDocument): { n: number; m: number; description: string } {
  assertProgressDocArgument(doc, 'taskPosition');
  const done = doc.completedTasks.length;
  const m = done + (doc.currentTask ? 1 : 0) + doc.remainingTasks.length;
  if (doc.currentTask) return { n: done + 1, m, description: doc.currentTask.description };
  if (doc.remainingTasks.length > 0) return { n: done + 1, m, description: doc.remainingTasks[0]! };
  return { n: done, m, description: m === 0 ? 'no tasks recorded' : 'all tasks done' };
}

/** The next action: the one given, else continuing the current task, else the first remaining task. */
export function nextActionOf(doc: ProgressDocument, explicit?: string): string {
  assertProgressDocArgument(doc, 'nextActionOf');
  if (explicit && explicit.trim() !== '') return explicit.trim();
  if (doc.currentTask) return `Continue ${doc.currentTask.description}${doc.currentTask.status ? ` (${doc.currentTask.status})` : ''}`;
  return doc.remainingTasks[0] ?? 'None';
}

/** Options of {@link statusCommentFor}. */
export interface StatusCommentOptions {
  /** The progress file as it was before this checkpoint; its decisions are not "since the last checkpoint". */
  readonly previous?: ProgressDocument;
  readonly status: ProgressStatus;
  readonly nextAction?: string;
  /** `**Updated:**` value (RFC 3339). */
  readonly updated: string;
}

/** Builds the comment fields from the progress document. */
export function statusCommentFor(doc: ProgressDocument, options: StatusCommentOptions): StatusCommentFields {
  assertProgressDocArgument(doc, 'statusCommentFor');
  assertOptionsArgument(options, 'statusCommentFor');
  const { n, m, description } = taskPosition(doc);
  const before = new Set((options.previous?.decisions ?? []).map((d) => d.decision.trim()));
  const fresh = doc.decisions.filter((d) => !before.has(d.decision.trim()));
  return {
    updated: options.updated,
    taskNumber: n,
    taskCount: m,
    task: description,
    status: options.status,
    decisions: fresh.map((d) => (d.rationale ? `${d.decision} (${d.rationale})` : d.decision)).join('; '),
    blockers: doc.blockers.map((b) => (b.unblockedBy ? `${b.description} (unblocked by: ${b.unblockedBy})` : b.description)).join('; '),
    next: nextActionOf(doc, options.nextAction),
  };
}
