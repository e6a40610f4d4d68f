import type {
  LifecycleSource,
  LifecycleStatus,
  LifecycleResumeHints,
  SnapshotLifecyclePayload,
  LifecycleStepState,
  LifecycleTerminalStepStatus,
} from './schema.js';

/**
 * A checkpoint request at one of snapshot-lifecycle.md's trigger points: the trigger
 * `source`, the run `status` and the payload to store. Pass it to the writer.
 */
export interface LifecycleCheckpointRequest {
  readonly source: LifecycleSource;
  readonly status: LifecycleStatus;
  readonly payload: SnapshotLifecyclePayload;
}

/** The step a {@link lifecycleTriggers.stepEntered} request moves to. */
export interface LifecycleStepRef {
  readonly step_id: string;
  readonly step_ordinal: number;
  /** @default the payload's current `plan_path` */
  readonly plan_path?: string;
  /** @default `{ eligible: true, reason_code: 'step_in_progress', next_actions: [] }` */
  readonly resume_hints?: LifecycleResumeHints;
}

/** An error classification, for the error-boundary helpers. */
export interface LifecycleErrorClassification {
  /** Stable reason code of the error (stored as `resume_hints.reason_code`). */
  readonly reason_code: string;
  /** What a resumed run should do first. @default [] */
  readonly next_actions?: readonly string[];
}

const withStep = (payload: SnapshotLifecyclePayload, step: Partial<LifecycleStepState>): SnapshotLifecyclePayload => ({
  ...payload,
  step_state: { ...payload.step_state, ...step },
});

const hints = (eligible: boolean, e: LifecycleErrorClassification): LifecycleResumeHints => ({
  eligible,
  reason_code: e.reason_code,
  next_actions: [...(e.next_actions ?? [])],
});

/**
 * Builders for snapshot-lifecycle.md's trigger points ("Snapshots are written at
 * deterministic boundaries"). Each returns the request for that boundary with the
 * payload's `step_state` updated to match; nothing else of the payload is changed.
 * The fifth boundary, the 120-second heartbeat, is run by the writer itself (the
 * profile's `heartbeat`).
 */
export const lifecycleTriggers = {
  /**
   * Step boundary: "after step enters `in_progress`". The run is `in_progress`, and the
   * resume hints start fresh for the new step (eligible, `step_in_progress`) unless given.
   */
  stepEntered(payload: SnapshotLifecyclePayload, step: LifecycleStepRef): LifecycleCheckpointRequest {
    return {
      source: 'step_boundary',
      status: 'in_progress',
      payload: withStep(payload, {
        step_id: step.step_id,
        step_ordinal: step.step_ordinal,
        plan_path: step.plan_path ?? payload.step_state.plan_path,
        step_status: 'in_progress',
        resume_hints: step.resume_hints
          ? { ...step.resume_hints, next_actions: [...step.resume_hints.next_actions] }
          : { eligible: true, reason_code: 'step_in_progress', next_actions: [] },
      }),
    };
  },

  /**
   * Step boundary: "after step reaches terminal state (`done`, `failed`, `skipped`)".
   * The run stays `in_progress` unless `runStatus` says otherwise (`completed` after the
   * last step; a failed step does not fail the run by itself). The resume hints become
   * `{ eligible: true, reason_code: 'step_<status>', next_actions: [] }` unless given.
   */
  stepFinished(
    payload: SnapshotLifecyclePayload,
    stepStatus: LifecycleTerminalStepStatus,
    runStatus: LifecycleStatus = 'in_progress',
    resumeHints?: LifecycleResumeHints,
  ): LifecycleCheckpointRequest {
    const resume_hints = resumeHints
      ? { ...resumeHints, next_actions: [...resumeHints.next_actions] }
      : { eligible: true, reason_code: `step_${stepStatus}`, next_actions: [] };
    return { source: 'step_boundary', status: runStatus, payload: withStep(payload, { step_status: stepStatus, resume_hints }) };
  },

  /**
   * Error boundary: "immediately after a recoverable error is classified". The run stays
   * `in_progress`; `resume_hints` become eligible with the error's reason code.
   */
  recoverableError(payload: SnapshotLifecyclePayload, error: LifecycleErrorClassification): LifecycleCheckpointRequest {
    return { source: 'error_boundary', status: 'in_progress', payload: withStep(payload, { resume_hints: hints(true, error) }) };
  },

  /**
   * Error boundary: "immediately before a forced stop due to unrecoverable error". The
   * run is `failed`; `resume_hints` are not eligible (a human decides).
   */
  forcedStop(payload: SnapshotLifecyclePayload, error: LifecycleErrorClassification): LifecycleCheckpointRequest {
    return { source: 'error_boundary', status: 'failed', payload: withStep(payload, { resume_hints: hints(false, error) }) };
  },

  /** Manual boundary: an explicit `/checkpoint` request. The status is kept as given. @default status `in_progress` */
  manual(payload: SnapshotLifecyclePayload, status: LifecycleStatus = 'in_progress'): LifecycleCheckpointRequest {
    return { source: 'manual', status, payload };
  },
} as const;
