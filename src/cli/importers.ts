import type { RunImporter } from '../profiles/import-run.js';

/**
 * Each profile's whole-run import, by profile name, for `savepoint import`. Loaded only when
 * used, like the profiles themselves. A profile without an entry has no run import (the
 * command says so). Add one line per profile: `name: async () => (await import('…')).importXRun`.
 */
export const RUN_IMPORTERS: Readonly<Record<string, () => Promise<RunImporter>>> = {
  snapshotLifecycle: async () => (await import('../profiles/snapshot-lifecycle/import.js')).importSnapshotLifecycleRun,
  phasedWorkflow: async () => (await import('../profiles/phased-workflow/import.js')).importPhasedWorkflowRun,
  planExecutor: async () => (await import('../profiles/plan-executor/import.js')).importPlanExecutorRun,
  handoffMarkdown: async () => (await import('../profiles/handoff-markdown/import.js')).importHandoffMarkdownRun,
  progressProtocol: async () => (await import('../profiles/progress-protocol/import.js')).importProgressProtocolRun,
};

/** The run importer of the profile named `name`, or `undefined` when it has none. */
export async function runImporterOf(name: string): Promise<RunImporter | undefined> {
  const load = Object.hasOwn(RUN_IMPORTERS, name) ? RUN_IMPORTERS[name] : undefined;
  return load ? load() : undefined;
}
