import { readContinuationPrompt } from '../codec.js';
import { genericContinuationTemplate, renderContinuationBox } from '../continuation.js';
import { readTextIfExists } from '../files.js';
import { CONSEQUENCE, record, type ProtocolRun } from './run-state.js';

/**
 * Step 4, continuation prompt (manual only): the `## Continuation Prompt` of the file, in
 * the spec's box, or the generic template with a warning when it cannot be read.
 */
export async function continuationStep(run: ProtocolRun): Promise<void> {
  const { progressName } = run;
  if (!run.manual) {
    run.steps.push({ step: 4, name: 'Continuation prompt', outcome: 'not_run' });
    return;
  }
  let cause: string;
  let continuationPrompt: string | undefined;
  try {
    const text = await readTextIfExists(run.progressPath);
    continuationPrompt = text === undefined ? undefined : readContinuationPrompt(text);
    cause = text === undefined ? `${progressName} not found` : 'no Continuation Prompt section';
  } catch (err) {
    cause = `${progressName} unreadable: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  if (continuationPrompt !== undefined) {
    run.continuationPrompt = continuationPrompt;
    record(run, { step: 4, name: 'Continuation prompt', outcome: 'succeeded', message: renderContinuationBox(continuationPrompt) });
    return;
  }
  const template = genericContinuationTemplate(run.progress?.issue.id ?? run.previous?.issue.id ?? run.options.progress?.issue?.id);
  run.continuationPrompt = template;
  record(run, {
    step: 4,
    name: 'Continuation prompt',
    outcome: 'failed',
    cause,
    consequence: CONSEQUENCE[4],
    message: `Warning: could not read the continuation prompt from ${progressName} (${cause}); here is a generic template to fill in.\n${renderContinuationBox(template)}`,
  });
}
