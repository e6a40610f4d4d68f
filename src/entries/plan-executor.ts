/**
 * `savepoint/plan-executor` — the plan-executor profile, after plan-executor.md: `NN-CHECKPOINT.json` task progress for a plan executor.
 * Everything specific to that spec lives here: its document schema and codec, layout,
 * triggers and their helpers, resume rule, retention defaults and import of documents
 * written by other tools.
 *
 * @module savepoint/plan-executor
 */
export * from '../profiles/plan-executor/index.js';
