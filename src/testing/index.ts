/**
 * Test helpers for savepoint users and adapter authors: the storage conformance suite,
 * a fault-injecting storage wrapper, a hand-moved clock and a GitHub API emulator.
 *
 * @packageDocumentation
 */
export {
  faultyStorage,
  type FaultyStorage,
  type FaultPlan,
  type FaultAction,
  type OperationInfo,
  type OperationRecord,
  type StorageOperation,
} from './faulty-storage.js';
export { manualClock, MANUAL_CLOCK_START, type ManualClock } from './manual-clock.js';
export * from './conformance/index.js';
export * from './github-emulator/index.js';
