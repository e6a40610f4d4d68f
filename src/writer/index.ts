/**
 * The CheckpointWriter: triggers → coalescing → numbering → crash-safe ordered writes.
 * See docs/writing.md.
 */
export { createWriter } from './create-writer.js';
export type {
  CheckpointInput,
  CheckpointOutcome,
  CheckpointSuccess,
  CheckpointFailure,
  CheckpointResult,
  CheckpointWriter,
  WriterOptions,
  WriterLockIdentity,
  WriterEventMap,
  WriterEventName,
} from './types.js';
export { materialText as writerMaterialText } from './triggers.js';
export {
  recoverRun as recoverWriterRun,
  type RecoveredRun as WriterRecoveredRun,
  type RecoveredHead as WriterRecoveredHead,
  type HeadLocation as WriterHeadLocation,
} from './sequence-recovery.js';
export { type RunLockDocument as WriterRunLockDocument } from './run-lock.js';
