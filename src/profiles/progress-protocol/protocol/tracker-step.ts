import { CheckpointError, isCheckpointError } from '../../../contract/errors.js';
import { updateStateFile } from '../files.js';
import type { StatusSink } from '../sinks/status-sink.js';
import { renderStatusComment, statusCommentFor } from '../status-comment.js';
import { causeOf, failedStep, record, type ProtocolRun } from './run-state.js';

/**
 * Step 3, tracker update (both profiles): the single "Checkpoint Status" comment upserted
 * through `sink`; its id kept in `.ccc-state.json` as `checkpointCommentId`.
 */
export async function trackerStep(run: ProtocolRun): Promise<void> {
  const sink = run.options.sink;
  if (!sink) {
    record(run, { step: 3, name: 'Tracker update', outcome: 'skipped', message: 'Tracker update skipped — no tracker configured.' });
    return;
  }
  const name = `${sink.name} update`;
  try {
    if (run.stateError !== undefined) throw run.stateError;
    await upsertStatusComment(run, sink, name);
  } catch (err) {
    record(run, failedStep(3, name, err, `${name} skipped`));
  }
}

async function upsertStatusComment(run: ProtocolRun, sink: StatusSink, name: string): Promise<void> {
  const { options, previous } = run;
  const doc = run.progress ?? previous;
  if (!doc)
    throw new CheckpointError('checkpoint_schema_invalid', 'no progress state', { details: { cause: 'no progress state to report' } });
  const status = options.status ?? (doc.blockers.length > 0 ? 'blocked' : 'in_progress');
  const body = renderStatusComment(
    statusCommentFor(doc, {
      ...(previous ? { previous } : {}),
      status,
      ...(options.nextAction ? { nextAction: options.nextAction } : {}),
      updated: run.now,
    }),
  );
  const stored = run.state.checkpointCommentId;
  const existing = typeof stored === 'number' || (typeof stored === 'string' && stored !== '') ? String(stored) : undefined;
  if (existing !== undefined && (await sink.updateComment(existing, body))) {
    run.commentId = existing;
    record(run, { step: 3, name, outcome: 'succeeded', message: `${sink.name} status comment updated.` });
    return;
  }
  let created: string | undefined = await sink.createComment(body);
  run.commentId = created;
  try {
    await updateStateFile(run.statePath, { checkpointCommentId: created });
  } catch (err) {
    record(run, {
      step: 3,
      name,
      outcome: 'failed',
      cause: 'checkpointCommentId not stored in .ccc-state.json',
      consequence: 'the comment was created, but the next checkpoint will create another.',
      message: `Warning: ${sink.name} status comment created, but its id could not be stored in .ccc-state.json (${causeOf(err)}).`,
      ...(isCheckpointError(err) ? { error: err } : {}),
    });
    created = undefined;
  }
  if (created) record(run, { step: 3, name, outcome: 'succeeded', message: `${sink.name} status comment created.` });
}
