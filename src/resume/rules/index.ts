export { snapshotLifecycleResumeRule, type SnapshotLifecycleResumeFields } from '../../profiles/snapshot-lifecycle/resume-rule.js';
export {
  phasedWorkflowResumeRule,
  createPhasedWorkflowResumeRule,
  PHASED_WORKFLOW_PHASE_KEYS,
  type PhasedWorkflowResumeFields,
  type PhasedWorkflowResumeOptions,
} from '../../profiles/phased-workflow/resume-rule.js';
export { planExecutorResumeRule, type PlanExecutorResumeFields } from '../../profiles/plan-executor/resume-rule.js';
export { defaultResumeRule } from '../default-rule.js';
