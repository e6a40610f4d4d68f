export * from './schema.js';
export { planExecutorDocumentFormat, planExecutorJsonSchema } from './document.js';
export { planExecutorLayout, type PlanExecutorLayoutOptions } from './layout.js';
export * from './profile.js';
export * from './progress.js';
export { importPlanExecutorDocument, importPlanExecutorRun, type ImportPlanExecutorOptions } from './import.js';
export type { RunImporter, RunImportOptions, RunImportReport, RunImportFile, RunImportAction } from '../import-run.js';
export { planExecutorResumeRule, type PlanExecutorResumeFields } from './resume-rule.js';
