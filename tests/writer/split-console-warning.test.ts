/**
 * phased-workflow-github.md, size_management: "3. Log warning about large checkpoint". A split
 * reaches the console when no `split` listener handles it — once per writer, sizes only (the
 * payload's content never appears) — and not at all when a listener takes the event.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWriter, defaultProfile, memoryStorage } from 'savepoint';

const SECRET = 'sk-live-DO-NOT-PRINT';
const overLimit = (n: number) => ({ a: `${SECRET}-${n}-`.repeat(2_000), b: [{ c: 'c'.repeat(60_000) }], n });

async function writeSplits(count: number, listen: boolean): Promise<{ logged: string[]; events: number }> {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
  const writer = createWriter({
    storage: memoryStorage(),
    profile: defaultProfile,
    runId: 'r1',
    maxSnapshotBytes: 100_000,
    heartbeatIntervalMs: false,
  });
  let events = 0;
  if (listen) writer.on('split', () => (events += 1));
  for (let n = 1; n <= count; n++) {
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: overLimit(n) });
    if (!r.ok) throw r.error;
  }
  await writer.close();
  const logged = warn.mock.calls.map((args) => args.map(String).join(' '));
  return { logged, events };
}

describe('split warning without a listener', () => {
  afterEach(() => vi.restoreAllMocks());

  it('is logged once per writer through console.warn, with sizes and no payload content (regression: silent without a listener)', async () => {
    const { logged } = await writeSplits(3, false);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/snapshot 1 of run r1 is \d+ bytes, over the 100000-byte limit/);
    expect(logged[0]).not.toContain(SECRET);
  });

  it('is not logged when a split listener handles it', async () => {
    const { logged, events } = await writeSplits(2, true);
    expect(events).toBe(2);
    expect(logged).toEqual([]);
  });
});
