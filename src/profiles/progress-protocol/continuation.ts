import type { ProgressDocument } from './model.js';
import { nextActionOf, taskPosition } from './status-comment.js';
import { assertOptionsArgument, assertStringArgument } from '../../contract/arguments.js';
import { assertProgressDocArgument } from './doc-argument.js';

/** The box of Step 4, as the spec draws it. */
export const CONTINUATION_BOX = [
  '╔══════════════════════════════════════════════════╗',
  '║  CONTINUATION PROMPT                             ║',
  '╚══════════════════════════════════════════════════╝',
].join('\n');

/** The closing line of Step 4. */
export const CONTINUATION_FOOTER = "Copy this prompt into your next session's first message.";

/** Step 4's output: the box, the prompt, the footer. */
export function renderContinuationBox(prompt: string): string {
  assertStringArgument(prompt, 'renderContinuationBox', 'prompt');
  return `${CONTINUATION_BOX}\n\n${prompt.trim()}\n\n${CONTINUATION_FOOTER}`;
}

/** The spec's template, for when `.ccc-progress.md` cannot be read; the issue id is filled in when known. */
export function genericContinuationTemplate(issueId?: string): string {
  if (issueId !== undefined) assertStringArgument(issueId, 'genericContinuationTemplate', 'issueId');
  return `Resume ${issueId?.trim() || 'CIA-XXX'}. Current task: [task N of M]. Key files: [file list].\nNext action: [specific next step].`;
}

const stripDot = (s: string): string => s.trim().replace(/[.\s]+$/, '');

/**
 * A continuation prompt in the spec's shape, from the progress state:
 * `Resume CIA-123. Current task: task 3 of 7 — <task>. Key files: a.ts, b.ts.\nNext action: <step>.`
 */
export function continuationPromptFor(
  doc: ProgressDocument,
  options: { readonly keyFiles?: readonly string[]; readonly nextAction?: string } = {},
): string {
  assertProgressDocArgument(doc, 'continuationPromptFor');
  assertOptionsArgument(options, 'continuationPromptFor');
  const { n, m, description } = taskPosition(doc);
  const files = (options.keyFiles ?? []).filter((f) => f.trim() !== '');
  return [
    `Resume ${doc.issue.id}. Current task: task ${n} of ${m} — ${stripDot(description.replace(/\s*\n\s*/g, ' '))}. Key files: ${files.length > 0 ? files.join(', ') : 'none recorded'}.`,
    `Next action: ${stripDot(nextActionOf(doc, options.nextAction).replace(/\s*\n\s*/g, ' '))}.`,
  ].join('\n');
}
