import { utf8Decode, utf8Encode } from '../../../codec/utf8.js';
import { CheckpointError } from '../../../contract/errors.js';
import { newSnapshotId, RUN_ID_PATTERN } from '../../../contract/ids.js';
import { parseProgress } from '../codec.js';
import { continuationPromptFor } from '../continuation.js';
import { readTextIfExists, writeFileAtomic } from '../files.js';
import { keepProgressForeignFields } from '../foreign.js';
import { ProgressDocumentSchema, ProgressMetaSchema, type ProgressDocument } from '../model.js';
import { PROGRESS_STATUSES, progressProtocol } from '../profile.js';
import type { ProgressInput } from '../protocol.js';
import { causeOf, failedStep, record, say, type ProtocolRun } from './run-state.js';

function runIdFor(issueId: string): string {
  const cleaned = issueId
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  return RUN_ID_PATTERN.test(cleaned) ? cleaned : 'session';
}

/** The existing progress file's text, and the run id and sequence of its metadata; sets `run.previous` when it parses. */
async function readPrevious(
  run: ProtocolRun,
): Promise<{ text: string | undefined; previousMeta: { run_id?: string; sequence?: number } | undefined }> {
  const { progressName } = run;
  let previousMeta: { run_id?: string; sequence?: number } | undefined;
  let text: string | undefined;
  try {
    text = await readTextIfExists(run.progressPath);
  } catch (err) {
    say(run, `Warning: the existing ${progressName} could not be read (${causeOf(err)}); it is rewritten from this checkpoint's state.`);
  }
  if (text !== undefined) {
    try {
      const parsed = parseProgress(text, progressName);
      run.previous = parsed.document;
      const meta = ProgressMetaSchema.partial().safeParse(parsed.meta);
      if (meta.success) previousMeta = meta.data;
    } catch (err) {
      say(run, `Warning: the existing ${progressName} could not be read (${causeOf(err)}); it is rewritten from this checkpoint's state.`);
    }
  }
  return { text, previousMeta };
}

/** The caller's progress merged over the previous file's, its continuation prompt regenerated when tasks changed, checked against the schema. */
function mergedProgress(run: ProtocolRun): ProgressDocument {
  const { options, previous } = run;
  const input = Object.fromEntries(Object.entries(options.progress ?? {}).filter(([, v]) => v !== undefined)) as ProgressInput;
  if (!input.issue && !previous)
    throw new CheckpointError('checkpoint_schema_invalid', 'no issue given', {
      details: { cause: `no issue given and no readable ${run.progressName}` },
    });
  const merged = {
    ...(previous ?? { completedTasks: [], remainingTasks: [], decisions: [], blockers: [], executionMode: '', continuationPrompt: '' }),
    ...input,
    session: input.session || run.now,
  } as ProgressDocument;
  const tasksChanged =
    input.currentTask !== undefined ||
    input.remainingTasks !== undefined ||
    input.completedTasks !== undefined ||
    options.nextAction !== undefined;
  if (input.continuationPrompt === undefined && (tasksChanged || !merged.continuationPrompt)) {
    merged.continuationPrompt = continuationPromptFor(merged, {
      ...(run.activeTaskFiles ? { keyFiles: run.activeTaskFiles } : {}),
      ...(options.nextAction ? { nextAction: options.nextAction } : {}),
    });
  }
  const checked = ProgressDocumentSchema.safeParse(merged);
  if (!checked.success) {
    const path = `/${checked.error.issues[0]!.path.join('/')}`;
    throw new CheckpointError('checkpoint_schema_invalid', `progress does not match its schema at ${path}`, {
      details: { cause: `invalid progress at ${path}` },
    });
  }
  return checked.data;
}

/**
 * Step 1, persist progress (both profiles): `.ccc-progress.md` created or updated in place,
 * sealed with savepoint's metadata so the `progressProtocol` profile can read it.
 */
export async function persistProgress(run: ProtocolRun): Promise<void> {
  const { options, progressName } = run;
  try {
    const { text, previousMeta } = await readPrevious(run);
    const progress = (run.progress = mergedProgress(run));
    const source = options.source ?? (run.manual ? 'handoff_request' : 'gate_boundary');
    progressProtocol.trigger(source);
    const status = options.status ?? (progress.blockers.length > 0 ? 'blocked' : 'in_progress');
    if (!(PROGRESS_STATUSES as readonly string[]).includes(status))
      throw new CheckpointError('checkpoint_schema_invalid', `unknown status ${status}`, {
        details: { cause: `unknown status ${status}` },
      });
    const encoded = await progressProtocol.document.encode({
      id: newSnapshotId(run.nowMs),
      runId: options.runId ?? previousMeta?.run_id ?? runIdFor(progress.issue.id),
      sequence: (previousMeta?.sequence ?? 0) + 1,
      createdAt: run.now,
      source,
      sourceDetails: [],
      status,
      payload: progress,
    });
    run.progress = encoded.snapshot.payload;
    // Lines the previous file's writer added (a **Branch:** line, a note) stay, as in any savepoint rewrite.
    const bytes = text === undefined ? encoded.bytes : await keepProgressForeignFields(utf8Encode(text), encoded.bytes);
    await writeFileAtomic(run.progressPath, utf8Decode(bytes));
    record(run, { step: 1, name: 'Persist progress', outcome: 'succeeded', message: `Progress saved to ${progressName}.` });
  } catch (err) {
    record(run, failedStep(1, 'Persist progress', err, `progress not persisted to ${progressName}`));
  }
}
