export * from './schema.js';
export * from './profile.js';
export * from './outcomes.js';
export * from './triggers.js';
export { importSnapshotLifecycleDocument, type ImportSnapshotLifecycleOptions, type JsonProfileImportOptions } from './import.js';
export { snapshotLifecycleResumeRule, type SnapshotLifecycleResumeFields } from './resume-rule.js';
export { snapshotLifecycleRetention, createSnapshotLifecycleRetention, type SnapshotLifecycleRetentionOptions } from './retention.js';
