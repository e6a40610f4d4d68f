/** Chunks hidden, put back or deleted at once: each chunk's own steps stay in their crash-safe order. */
export const AT_ONCE = 16;

/**
 * Runs `fn` over `items`, {@link AT_ONCE} at a time. After a failure no new item is begun, and
 * the first error is thrown once the calls in flight have ended, so nothing of a failed sweep
 * runs on behind its caller.
 */
export async function eachLimit<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (error) {
        failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, items.length) }, worker));
  if (failed) throw failed.error;
}
