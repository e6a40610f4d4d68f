/**
 * Maps `items` through `fn` with at most `limit` calls in flight, keeping the order of
 * results. Storage reads over a whole run or store go through it so a slow or
 * rate-limited backend is never hit with thousands of requests at once.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}
