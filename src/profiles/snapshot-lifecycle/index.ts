export * from './schema.js';
export * from './profile.js';
export * from './outcomes.js';
export * from './triggers.js';
export {
  importSnapshotLifecycleDocument,
  importSnapshotLifecycleRun,
  type ImportSnapshotLifecycleOptions,
  type JsonProfileImportOptions,
} from './import.js';
export type { RunImporter, RunImportOptions, RunImportReport, RunImportFile, RunImportAction } from '../import-run.js';
export { snapshotLifecycleResumeRule, type SnapshotLifecycleResumeFields } from './resume-rule.js';
export { snapshotLifecycleRetention, createSnapshotLifecycleRetention, type SnapshotLifecycleRetentionOptions } from './retention.js';
