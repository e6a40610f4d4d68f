/**
 * What `call` returns, a synchronous throw turned into a rejection as an async function would
 * turn it, without an async function's own promise around it (hot paths count their promises).
 */
export function promiseOf<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (err) {
    return Promise.reject(err);
  }
}
