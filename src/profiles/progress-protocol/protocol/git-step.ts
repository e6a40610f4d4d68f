import { gitSnapshot } from '../git.js';
import type { ProgressDocument } from '../model.js';
import type { CheckpointProtocolOptions, CommitMessageContext } from '../protocol.js';
import { taskPosition } from '../status-comment.js';
import { causeOf, failedStep, record, type ProtocolRun } from './run-state.js';

/** The default commit message: `checkpoint(CIA-123): task 3 of 7 — Implement scoring`. */
export const DEFAULT_COMMIT_MESSAGE = 'checkpoint({issue}): task {n} of {m} — {task}';

function commitMessageFor(template: CheckpointProtocolOptions['commitMessage'], doc: ProgressDocument, timestamp: string): string {
  const { n, m, description } = taskPosition(doc);
  const context: CommitMessageContext = {
    issue: doc.issue.id,
    title: doc.issue.title,
    task: description.replace(/\s*\n\s*/g, ' '),
    n,
    m,
    mode: doc.executionMode,
    timestamp,
  };
  if (typeof template === 'function') return template(context);
  return (template ?? DEFAULT_COMMIT_MESSAGE).replace(/\{(issue|title|task|n|m|mode|timestamp)\}/g, (_, key: keyof CommitMessageContext) =>
    String(context[key]),
  );
}

function emptyProgress(): ProgressDocument {
  return {
    issue: { id: 'unknown', title: '' },
    session: '',
    executionMode: '',
    completedTasks: [],
    remainingTasks: [],
    decisions: [],
    blockers: [],
    continuationPrompt: '-',
  };
}

/** Step 2, git snapshot (manual only): see {@link gitSnapshot} — only in-scope tracked files. */
export async function gitStep(run: ProtocolRun): Promise<void> {
  const { options } = run;
  if (!run.manual) {
    run.steps.push({ step: 2, name: 'Git snapshot', outcome: 'not_run' });
  } else if (run.stateError !== undefined && options.inScopeFiles === undefined) {
    record(run, {
      step: 2,
      name: 'Git snapshot',
      outcome: 'skipped',
      message: `Git snapshot skipped — .ccc-state.json could not be read (${causeOf(run.stateError)}), so no file is known to be in scope.`,
    });
  } else {
    try {
      const message = commitMessageFor(options.commitMessage, run.progress ?? run.previous ?? emptyProgress(), run.now);
      const result = await gitSnapshot({ cwd: options.cwd, inScopeFiles: run.activeTaskFiles, message, ...(options.git ?? {}) });
      record(run, {
        step: 2,
        name: 'Git snapshot',
        outcome: result.outcome === 'committed' ? 'succeeded' : 'skipped',
        message: result.message,
      });
    } catch (err) {
      record(run, failedStep(2, 'Git snapshot', err, 'git snapshot failed'));
    }
  }
}
