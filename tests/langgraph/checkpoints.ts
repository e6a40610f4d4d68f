import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';

/** Checkpoint `n` of a test thread: LangGraph's uuid6 id for `n`, `values` as its channels, each at version n + 1. */
export const cp = (n: number, values: Record<string, unknown> = {}): Checkpoint => ({
  ...emptyCheckpoint(),
  id: uuid6(n),
  channel_values: values,
  channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, n + 1])),
});

/** The metadata LangGraph's loop writes with a step's checkpoint. */
export const meta = { source: 'loop' as const, step: 0, parents: {} };
