import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { SavepointSaver } from 'savepoint/langgraph';

/** Where a thread's supersteps are: the config of its newest checkpoint and the step count. */
export interface Cursor {
  config: RunnableConfig;
  step: number;
}

/**
 * One superstep as LangGraph's loop sends it: the task's writes under the current checkpoint, then
 * the next checkpoint (`id`, else a uuid6 of now).
 */
export async function superstep(saver: SavepointSaver, cursor: Cursor, id?: string): Promise<void> {
  const step = ++cursor.step;
  if (cursor.config.configurable?.['checkpoint_id'] !== undefined)
    await saver.putWrites(cursor.config, [['note', `step ${step}`]], `task-${step}`);
  const checkpoint: Checkpoint = {
    ...emptyCheckpoint(),
    id: id ?? uuid6(step),
    channel_values: { note: `step ${step}` },
    channel_versions: { note: step },
  };
  cursor.config = await saver.put(cursor.config, checkpoint, { source: 'loop', step, parents: {} }, { note: step });
}
