/**
 * The built-in JSON profiles: snapshotLifecycle (snapshot-lifecycle.md), phasedWorkflow
 * (phased-workflow-github.md) and planExecutor (plan-executor.md).
 */
export * from './snapshot-lifecycle/index.js';
export * from './phased-workflow/index.js';
export * from './plan-executor/index.js';
