export { snapshotLifecycleResumeRule, type SnapshotLifecycleResumeFields } from './snapshot-lifecycle.js';
export {
  phasedWorkflowResumeRule,
  createPhasedWorkflowResumeRule,
  PHASED_WORKFLOW_PHASE_KEYS,
  type PhasedWorkflowResumeFields,
  type PhasedWorkflowResumeOptions,
} from './phased-workflow.js';
export { planExecutorResumeRule, type PlanExecutorResumeFields } from './plan-executor.js';
export { defaultResumeRule } from './default.js';
