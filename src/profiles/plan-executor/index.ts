export * from './schema.js';
export { planExecutorDocumentFormat, planExecutorJsonSchema } from './document.js';
export { planExecutorLayout, type PlanExecutorLayoutOptions } from './layout.js';
export * from './profile.js';
export * from './progress.js';
export { importPlanExecutorDocument, type ImportPlanExecutorOptions } from './import.js';
export { planExecutorResumeRule, type PlanExecutorResumeFields } from './resume-rule.js';
