import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';

const hasDate = (v: unknown): boolean => v instanceof Date || (typeof v === 'object' && v !== null && Object.values(v).some(hasDate));

describe("the writer's private copy of a payload", () => {
  it('is the payload as stored: later mutation by the agent changes nothing, and the result equals what a reader gets', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'copy', heartbeatIntervalMs: false, nonJson: 'warn' });
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

  it("a Date is refused by default (it would come back a string), with its path and never its value; nonJson: 'warn' stores it converted and says where", async () => {
    const storage = memoryStorage();
    const strict = createWriter({ storage, profile: defaultProfile, runId: 'dates', heartbeatIntervalMs: false });
    const refused = await strict.checkpoint({
      source: 'manual',
      status: 'in_progress',
      payload: { plan: { due: new Date(Date.UTC(2026, 0, 2)) }, secret: 'TOP' } as unknown as JsonValue,
    });
    await strict.close();
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.reasonCode).toBe('checkpoint_schema_invalid');
    expect(refused.error.details).toMatchObject({ paths: ['$.plan.due'], reason: 'non_json_value' });
    expect(refused.error.message).not.toContain('2026');
    const lenient = createWriter({ storage, profile: defaultProfile, runId: 'dates', heartbeatIntervalMs: false, nonJson: 'warn' });
    const converted: string[] = [];
    lenient.on('converted', (e) => converted.push(e.path));
    const stored = await lenient.checkpoint({
      source: 'manual',
      status: 'in_progress',
      payload: [1, { due: new Date(0) }] as unknown as JsonValue,
    });
    await lenient.close();
    expect(stored.ok && stored.snapshot.payload).toEqual([1, { due: '1970-01-01T00:00:00.000Z' }]);
    expect(converted).toEqual(['$[1].due']);
    expect(() => createWriter({ storage, runId: 'x', nonJson: 'ignore' as never })).toThrow(/nonJson/);
  });

  it('property: a value JSON keeps is stored and read back unchanged; one it cannot keep is refused, never changed silently', async () => {
    const { default: fc } = await import('fast-check');
    await fc.assert(
      fc.asyncProperty(
        fc.anything({
          withDate: true,
          withMap: true,
          withSet: true,
          withBigInt: true,
          withNullPrototype: true,
          withSparseArray: true,
          maxDepth: 3,
        }),
        async (value) => {
          const storage = memoryStorage();
          const writer = createWriter({ storage, profile: defaultProfile, runId: 'any', heartbeatIntervalMs: false });
          const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: value as JsonValue });
          await writer.close();
          if (!r.ok) {
            expect(r.reasonCode).toBe('checkpoint_schema_invalid');
            return;
          }
          // Stored: what comes back is what JSON round-trips exactly (undefined members left out, -0 as 0).
          const back = (await readSnapshot(storage, defaultProfile, defaultProfile.layout.latestKey('any')))!.payload;
          expect(back).toEqual(JSON.parse(JSON.stringify(value)));
          expect(hasDate(value)).toBe(false); // no Date slipped through converted
        },
      ),
      { numRuns: 300 },
    );
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
