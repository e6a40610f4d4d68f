import type { RunnableConfig } from '@langchain/core/runnables';
import { CheckpointError } from '../contract/errors.js';

/** `config.configurable`, where LangGraph puts the thread, namespace and checkpoint ids. */
export type Configurable = Record<string, unknown>;

export function configurableOf(config: RunnableConfig): Configurable | undefined {
  return config.configurable as Configurable | undefined;
}

export function requireThreadId(config: RunnableConfig, operation: string): string {
  const threadId = configurableOf(config)?.thread_id;
  if (typeof threadId !== 'string' && typeof threadId !== 'number') {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      `${operation}: config.configurable.thread_id is required (graph.invoke(input, { configurable: { thread_id } }))`,
      {
        details: { operation },
      },
    );
  }
  return String(threadId);
}

export function namespaceOf(config: RunnableConfig): string {
  const ns = configurableOf(config)?.checkpoint_ns;
  if (ns === undefined || ns === null) return '';
  if (typeof ns !== 'string') throw new CheckpointError('checkpoint_config_invalid', 'config.configurable.checkpoint_ns must be a string');
  return ns;
}

/** A non-empty `checkpoint_id` of `configurable`, else undefined. */
export function checkpointIdOf(configurable: Configurable | undefined): string | undefined {
  const value = configurable?.checkpoint_id;
  return typeof value === 'string' && value !== '' ? value : undefined;
}
