/*
 * Background file-system work (applying committed files, making temp files ahead) runs in a
 * narrow lane: libuv's thread pool has four threads by default and serves calls in order,
 * so a burst of background calls would queue a commit's own write ahead of nothing but
 * them. With at most two background calls in the pool at once (all stores of the process
 * together), a commit's write finds a free thread.
 */

/**
 * The process's lane for the background work of every journaled store: the thread pool is
 * one per process, so two stores (or a store per run) must not each take two threads.
 */
let shared: BackgroundLane | undefined;
export function backgroundLane(): BackgroundLane {
  return (shared ??= createLane(2));
}

/** Runs calls with at most `width` of them in flight; the others wait in order. */
export type Lane = <T>(call: () => Promise<T>) => Promise<T>;

/**
 * A lane whose `first` entry queues a call ahead of every waiting one (still within the
 * width): work a commit will wait for (temp files made ahead) passes applies,
 * which can lag — a lagging apply merges more groups and so needs fewer temp files.
 */
export type BackgroundLane = Lane & { readonly first: Lane };

export function createLane(width: number): BackgroundLane {
  let active = 0;
  const waiting: (() => void)[] = [];
  const entry =
    (front: boolean): Lane =>
    async <T>(call: () => Promise<T>): Promise<T> => {
      if (active >= width) await new Promise<void>((r) => (front ? waiting.unshift(r) : waiting.push(r)));
      else active++;
      try {
        return await call();
      } finally {
        // Hand the slot straight to the next waiter (active stays the same), or free it.
        const next = waiting.shift();
        if (next) next();
        else active--;
      }
    };
  return Object.assign(entry(false), { first: entry(true) });
}
