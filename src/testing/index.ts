/**
 * Test helpers for savepoint users and adapter authors: the storage conformance suite
 * and a fault-injecting storage wrapper.
 *
 * @packageDocumentation
 */
export { faultyStorage, type FaultyStorage, type FaultPlan, type FaultAction, type OperationInfo, type OperationRecord, type StorageOperation } from './faulty-storage.js';
export * from './conformance/index.js';
export * from './github-emulator/index.js';
