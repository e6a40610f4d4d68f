/** Conversations written as checkpoints for the chunk sweep's tests, and what each kept key must read back as. */
import { createWriter, defaultProfile, type JsonValue, type StorageAdapter } from 'savepoint';
import { prose as proseText, PROSE_WORDS } from './prose.js';

/** Prose-like text (not periodic) from a seed, with non-ASCII and quotes. */
const prose = (seed: number, size: number): string => proseText(seed, size, [...PROSE_WORDS, 'é', '"q"']);

export class ChunkWorld {
  readonly kept = new Map<string, JsonValue>();
  readonly lists = new Map<string, JsonValue[]>();
  /** Every state written, kept or not. */
  readonly written: JsonValue[] = [];
  constructor(readonly storage: StorageAdapter) {}

  /** A new state of `run` written through `writer` (an adapter over the store's data), or `again` (a state written before). */
  async writeThrough(writer: StorageAdapter, run: string, seed: number, again?: JsonValue): Promise<void> {
    const base = this.lists.get(run) ?? Array.from({ length: 10 }, (_, i) => prose(i + 1, 1800));
    // An even seed appends a message, an odd one replaces one: chunks of a replaced message may come back with an older state.
    const list =
      seed % 2 === 0 ? [...base, prose(seed, 2000)] : base.map((m, i) => (i === Math.abs(seed) % base.length ? prose(seed, 2000) : m));
    if (!again) this.lists.set(run, list);
    const w = createWriter({ storage: writer, profile: defaultProfile, runId: run, heartbeatIntervalMs: false, lock: false });
    const state = again ?? { messages: list, seed };
    this.written.push(state);
    const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state });
    await w.close();
    if (!r.ok) throw r.error;
    this.kept.set(r.key!, state);
    this.kept.set(`checkpoints/${run}/latest.json`, state);
  }

  /** Deletes one kept history checkpoint, picked by `pick`. */
  async drop(pick: number): Promise<void> {
    const history = [...this.kept.keys()].filter((k) => k.includes('/history/'));
    if (history.length === 0) return;
    const key = history[pick % history.length]!;
    await this.storage.delete(key);
    this.kept.delete(key);
  }
}
