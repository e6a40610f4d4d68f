import type { ResumePoint, ResumeRule } from '../contract/resume-rule.js';
import type { LangGraphPayload } from './profile.js';
import { langGraphView } from './view.js';

/**
 * Resume rule of the langgraph profile: a thread continues from its newest checkpoint when
 * that checkpoint schedules nodes (`next`, as LangGraph's `getState()` reports it: an
 * interrupted or crashed superstep, input not yet run); a checkpoint that schedules none is a
 * finished graph — nothing to resume (`graph_complete`, not eligible).
 */
export const langGraphResumeRule: ResumeRule<LangGraphPayload> = (snapshot): ResumePoint => {
  const view = langGraphView(snapshot);
  const where = `checkpoint ${view.checkpointId} of thread ${view.threadId}${view.checkpointNs ? ` (namespace ${view.checkpointNs})` : ''}, step ${view.step ?? '?'}`;
  if (view.next.length === 0) {
    return {
      at: view.checkpointId,
      reason: 'graph_complete',
      explanation: `the graph finished at ${where}: no node is scheduled; invoke it with new input to continue the thread`,
      eligible: false,
      completed: [],
      remaining: [],
    };
  }
  return {
    at: view.checkpointId,
    reason: 'graph_next_nodes',
    explanation: `continue from ${where}: next ${view.next.join(', ')}`,
    eligible: true,
    completed: [],
    remaining: [...view.next],
  };
};
