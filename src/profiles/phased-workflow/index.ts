export * from './schema.js';
export * from './phases.js';
export * from './profile.js';
export * from './triggers.js';
export { splitPhasedWorkflowDocument } from './split.js';
export { importPhasedWorkflowDocument, importPhasedWorkflowRun, type ImportPhasedWorkflowOptions } from './import.js';
export type { RunImporter, RunImportOptions, RunImportReport, RunImportFile, RunImportAction } from '../import-run.js';
export {
  phasedWorkflowResumeRule,
  createPhasedWorkflowResumeRule,
  PHASED_WORKFLOW_PHASE_KEYS,
  type PhasedWorkflowResumeFields,
  type PhasedWorkflowResumeOptions,
  type PhasedWorkflowResumePoint,
} from './resume-rule.js';
export { phasedWorkflowRetention, createPhasedWorkflowRetention, type PhasedWorkflowRetentionOptions } from './retention.js';
export { phasedWorkflowSummarizer, summarizePhasedPayload } from './summary.js';
