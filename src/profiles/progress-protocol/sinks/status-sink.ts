/**
 * Where progress-protocol.md's single "Checkpoint Status" comment lives (Step 3). The
 * protocol creates it once, stores its id in `.ccc-state.json` as `checkpointCommentId`,
 * and updates it in place afterwards.
 *
 * Implementations reject with a `CheckpointError` (`checkpoint_tracker_unavailable` or
 * `checkpoint_rate_limited`) whose `details.cause` is a short, secret-free text for the
 * completion report (`HTTP 503`).
 */
export interface StatusSink {
  /** The tracker's name as the report names the step: `Linear` → "Linear update". */
  readonly name: string;
  /** Creates the comment and resolves its id. */
  createComment(body: string): Promise<string>;
  /** Replaces the comment's body; resolves `false` when the comment no longer exists (the protocol then creates a new one). */
  updateComment(id: string, body: string): Promise<boolean>;
}
