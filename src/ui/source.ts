/**
 * What every view of the viewer reads from: a store, the profile it was written with, and
 * a clock; and how the views report an error to the page.
 */
import type { Clock } from '../contract/clock.js';
import { type CheckpointError } from '../contract/errors.js';
import type { Profile } from '../contract/profile.js';
import { collectRunFiles, type RunFiles } from '../snapshot-io/run-files.js';
import type { StorageAdapter } from '../contract/storage.js';

/** The store the viewer shows. */
export interface ViewerSource {
  readonly storage: StorageAdapter;
  readonly profile: Profile<unknown>;
  readonly clock: Clock;
}

/** An error as the page shows it: a stable reason code and a sentence. */
export interface ErrorView {
  readonly reasonCode: string;
  readonly message: string;
}

export const errorView = (err: CheckpointError): ErrorView => ({ reasonCode: err.reasonCode, message: err.message });

/** The files of one run, after checking its id against the profile; `undefined` for an unknown run. */
export async function runFiles(source: ViewerSource, runId: string): Promise<RunFiles | undefined> {
  source.profile.assertRunId(runId);
  return (await collectRunFiles(source.storage, source.profile, runId)).runs.get(runId);
}
