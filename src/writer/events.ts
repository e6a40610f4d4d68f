import type { WriterEventMap, WriterEventName } from './types.js';

/** A minimal typed emitter: the writer's observability hooks. */
export interface WriterEmitter {
  on<E extends WriterEventName>(event: E, listener: (payload: WriterEventMap[E]) => void): () => void;
  emit<E extends WriterEventName>(event: E, payload: WriterEventMap[E]): void;
  /** True when someone listens to `event` (lets the writer skip building payloads). */
  has(event: WriterEventName): boolean;
}

/**
 * Creates the writer's emitter. A throwing listener is ignored: observability must never
 * break a checkpoint (and events never carry payload contents, so nothing leaks through them).
 */
export function createWriterEmitter(): WriterEmitter {
  const listeners = new Map<WriterEventName, Set<(payload: never) => void>>();
  return {
    on(event, listener) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      const fn = listener as (payload: never) => void;
      set.add(fn);
      return () => {
        set.delete(fn);
      };
    },
    emit(event, payload) {
      const set = listeners.get(event);
      if (!set) return;
      for (const fn of [...set]) {
        try {
          (fn as (p: typeof payload) => void)(payload);
        } catch {
          // Deliberately swallowed: see above.
        }
      }
    },
    has: (event) => (listeners.get(event)?.size ?? 0) > 0,
  };
}
