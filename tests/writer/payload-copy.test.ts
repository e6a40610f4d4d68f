import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';

describe("the writer's private copy of a payload", () => {
  it('is the payload as stored: later mutation by the agent changes nothing, and the result equals what a reader gets', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'copy', heartbeatIntervalMs: false });
    const state = { at: new Date(Date.UTC(2026, 0, 2)), list: [1, 2], gone: undefined, nested: { k: 'v' } };
    const result = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: state as unknown as JsonValue });
    state.list.push(3);
    state.nested.k = 'changed';
    await writer.close();
    if (!result.ok) throw result.error;
    const stored = await readSnapshot(storage, defaultProfile, defaultProfile.layout.latestKey('copy'));
    expect(result.snapshot.payload).toEqual({ at: '2026-01-02T00:00:00.000Z', list: [1, 2], nested: { k: 'v' } });
    expect(stored?.payload).toEqual(result.snapshot.payload);
    expect(stored?.integrity.checksum).toBe(result.snapshot.integrity.checksum);
  });

  it('coalesces equal states however their keys were ordered', async () => {
    const writer = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'order', heartbeatIntervalMs: false });
    const a = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { x: 1, y: { b: 2, a: 1 } } });
    const b = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { y: { a: 1, b: 2 }, x: 1 } });
    await writer.close();
    expect(a.ok && a.outcome).toBe('written');
    expect(b.ok && b.outcome).toBe('coalesced');
  });
});
