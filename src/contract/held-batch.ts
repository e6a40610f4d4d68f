import type { StorageAdapter } from './storage.js';

/**
 * Held batches: joining new checkpoints into the file of the run's newest snapshot while a
 * buffered store still holds that file locally.
 *
 * Below the rate-limit floor, checkpoints awaited one at a time arrive one per group commit,
 * so a group never holds the two checkpoints a batch file needs (phased-workflow-github.md
 * `batching_strategy`). A store that holds writes below the floor (githubStorage's
 * `holdBelowFloor`) has not sent the previous checkpoint's file yet: while `isPending` says
 * so, the new checkpoints join it in one `batch_{first}_{last}.json` that replaces the held
 * file in the same atomic write, and the store pushes only the end state — one batch file.
 *
 * Why a profile hook ({@link ProfileDefinition.joinHeldHead}) and not a store decorator: the
 * join writes the profile's batch-file format under the layout's `batchKey`; the store only
 * answers whether a file is still held (`BufferedStorage.isPending`). As a decorator, the
 * store would have to know a profile's document format. `defineProfile` gives every profile
 * this join by default (a layout with `batchKey` is what makes it apply), so runs of every
 * profile keep the files they had.
 */

/** One snapshot of a batch file: its sequence and its document bytes as stored. */
export interface HeldMember {
  readonly sequence: number;
  readonly bytes: Uint8Array;
}

/** The run's newest snapshot as stored in a file the writer may replace: a history entry, or a batch file with its members. */
export interface HeldHead {
  readonly sequence: number;
  readonly key: string;
  readonly version: string;
  /** Present when the file is a batch file. */
  readonly members?: readonly HeldMember[];
}

/** A batch file that takes over the file of the run's newest snapshot while it is still held locally. */
export interface HeldBatch {
  /** `batch_{first}_{last}.json`. */
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly members: readonly HeldMember[];
  /** The held file it replaces (the newest snapshot's `cp_` file or a smaller batch file), deleted in the same write. */
  readonly replaced: string;
}

/** The hook's shape: see {@link joinHeldHead}. */
export type HeldHeadJoin = (
  storage: StorageAdapter,
  batchKey: (runId: string, first: number, last: number) => string,
  runId: string,
  head: HeldHead,
  added: readonly HeldMember[],
  maxBytes: number,
) => Promise<HeldBatch | undefined>;
