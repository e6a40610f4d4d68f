import type { RunnableConfig } from '@langchain/core/runnables';
import { CheckpointError } from '../contract/errors.js';

/** `config.configurable`, where LangGraph puts the thread, namespace and checkpoint ids. */
export type Configurable = Record<string, unknown>;

/**
 * `config.configurable`. A missing or malformed config (LangGraph types promise an object, a
 * JavaScript caller may pass anything) is `checkpoint_config_invalid`, not a TypeError.
 */
export function configurableOf(config: RunnableConfig, operation = 'SavepointSaver'): Configurable | undefined {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      `${operation}: config must be an object, such as { configurable: { thread_id } } (got ${config === null ? 'null' : Array.isArray(config) ? 'an array' : typeof config})`,
      { details: { operation } },
    );
  }
  const configurable: unknown = config.configurable;
  if (configurable === undefined || configurable === null) return undefined;
  if (typeof configurable !== 'object' || Array.isArray(configurable)) {
    throw new CheckpointError('checkpoint_config_invalid', `${operation}: config.configurable must be an object`, {
      details: { operation },
    });
  }
  return configurable as Configurable;
}

export function requireThreadId(config: RunnableConfig, operation: string): string {
  const threadId = configurableOf(config, operation)?.thread_id;
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
  const ns = configurableOf(config, 'config')?.checkpoint_ns;
  if (ns === undefined || ns === null) return '';
  if (typeof ns !== 'string') throw new CheckpointError('checkpoint_config_invalid', 'config.configurable.checkpoint_ns must be a string');
  return ns;
}

/** A non-empty `checkpoint_id` of `configurable`, else undefined. */
export function checkpointIdOf(configurable: Configurable | undefined): string | undefined {
  const value = configurable?.checkpoint_id;
  return typeof value === 'string' && value !== '' ? value : undefined;
}
