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

/** A ~`length`-character message of letters, different for every seed (no store compresses it to nothing). */
export function message(seed: number, length: number): string {
  let x = seed || 1;
  let text = `m${seed}: `;
  while (text.length < length) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    text += String.fromCharCode(97 + ((x >>> 0) % 26));
  }
  return text;
}

/** The config of test thread `t`, at checkpoint `checkpoint_id` when given. */
export const config = (checkpoint_id?: string) => ({
  configurable: { thread_id: 't', checkpoint_ns: '', ...(checkpoint_id ? { checkpoint_id } : {}) },
});
