/**
 * Serializes writes. GitHub asks integrators to send requests for one user serially,
 * and the contents API documents that parallel writes to one branch conflict; a commit
 * built while another is in flight would only lose the race. So writes to one branch
 * go one at a time — across every githubStorage of this JavaScript realm that targets
 * the same repository and branch (scope `'branch'`), or within one adapter (`'adapter'`).
 */
const chains = new Map<string, Promise<unknown>>();

/** Runs functions one after another under `scope` (undefined: a private chain). */
export type WriteLock = <T>(fn: () => Promise<T>) => Promise<T>;

/** Creates a lock for `scope`; adapters created with the same scope string share it. */
export function createWriteLock(scope: string | undefined): WriteLock {
  let own: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const tail = scope === undefined ? own : (chains.get(scope) ?? Promise.resolve());
    const run = tail.then(fn, fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    if (scope === undefined) own = settled;
    else {
      chains.set(scope, settled);
      // Drop the entry once idle so the map does not grow with every branch ever used.
      void settled.then(() => {
        if (chains.get(scope) === settled) chains.delete(scope);
      });
    }
    return run;
  };
}
