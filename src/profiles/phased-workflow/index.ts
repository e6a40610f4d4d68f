export * from './schema.js';
export * from './phases.js';
export * from './profile.js';
export * from './triggers.js';
export { splitPhasedWorkflowDocument } from './split.js';
export { importPhasedWorkflowDocument, type ImportPhasedWorkflowOptions } from './import.js';
