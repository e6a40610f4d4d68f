import fc from 'fast-check';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as z3 from 'zod3';
import {
  createWriter,
  defaultProfile,
  defineProfile,
  isCheckpointError,
  jsonProfile,
  listAll,
  memoryStorage,
  planResume,
  type Profile,
} from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';

interface Step {
  step: number;
  label: string;
}

/** Each library's own verdict, through its native API (they differ at the edges: zod 3's int() takes 2^53). */
const nativeAccepts: Record<string, (value: unknown) => boolean> = {
  'zod 4': (value) => schemas['zod 4'].safeParse(value).success,
  'zod 3': (value) => schemas['zod 3'].safeParse(value).success,
  valibot: (value) => v.safeParse(schemas.valibot, value).success,
};

const schemas = {
  'zod 4': z.object({ step: z.number().int().min(0), label: z.string() }),
  'zod 3': z3.object({ step: z3.number().int().min(0), label: z3.string() }),
  valibot: v.object({ step: v.pipe(v.number(), v.integer(), v.minValue(0)), label: v.string() }),
};

describe.each(Object.entries(schemas))('a payload schema from %s', (_library, schema) => {
  it('checks each checkpoint, stores valid payloads, and resumes them', async () => {
    const storage = memoryStorage();
    const profile = jsonProfile<Step>({ schema });
    const writer = createWriter({ storage, profile, runId: 'r1', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    const ok = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1, label: 'a' } });
    expect(ok.ok).toBe(true);
    const bad = await writer.checkpoint({
      source: 'step_boundary',
      status: 'in_progress',
      payload: { step: -1, label: 7 } as unknown as Step,
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.reasonCode).toBe('checkpoint_schema_invalid');
      expect(bad.error.details?.paths).toEqual(expect.arrayContaining(['$.step', '$.label']));
      // Issue paths only: some libraries put the received value in their messages (valibot: "received 7").
      expect(bad.error.message).not.toContain('7');
      expect(JSON.stringify(bad.error.details)).not.toContain('7');
    }
    await writer.checkpoint({ source: 'step_boundary', status: 'completed', payload: { step: 2, label: 'b' } });
    await writer.close();

    const plan = await planResume({ storage, profile, runId: 'r1' });
    expect(plan?.payload).toEqual({ step: 2, label: 'b' });
    // The documents are the default profile's: it reads them back too.
    const asDefault = await planResume({ storage, profile: defaultProfile, runId: 'r1' });
    expect(asDefault?.payload).toEqual({ step: 2, label: 'b' });
  });

  it('defineProfile takes it as the payload schema', async () => {
    const storage = memoryStorage();
    // The default profile's document format: its statuses are snapshot-lifecycle.md's.
    const profile = defineProfile<Step, 'go', 'in_progress' | 'completed'>({
      name: 'custom',
      payload: schema,
      triggers: { go: {} },
      statuses: { all: ['in_progress', 'completed'], terminal: ['completed'], active: 'in_progress' },
      layout: defaultProfile.layout,
      document: defaultProfile.document as unknown as Profile<Step>['document'],
    });
    const writer = createWriter({ storage, profile, runId: 'r2', heartbeatIntervalMs: false });
    expect((await writer.checkpoint({ source: 'go', status: 'completed', payload: { step: 3, label: 'c' } })).ok).toBe(true);
    expect((await writer.checkpoint({ source: 'go', status: 'completed', payload: { step: 0.5, label: 'c' } })).ok).toBe(false);
    await writer.close();
  });
});

describe('Standard Schema payloads', () => {
  it('accept exactly what the schema library accepts (property)', async () => {
    const storage = memoryStorage();
    const writers = Object.entries(schemas).map(([name, schema]) => ({
      name,
      writer: createWriter({
        storage,
        profile: jsonProfile<Step>({ schema }),
        runId: `p-${name.replace(' ', '')}`,
        heartbeatIntervalMs: false,
        coalesceWindowMs: 0,
      }),
    }));
    const value = fc.oneof(
      fc.record({ step: fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double(), fc.string()), label: fc.oneof(fc.string(), fc.integer()) }),
      fc.jsonValue(),
    );
    await fc.assert(
      fc.asyncProperty(value, async (payload) => {
        for (const { name, writer } of writers) {
          const expected = nativeAccepts[name]!(payload);
          const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: payload as Step });
          const stored = r.ok || r.reasonCode !== 'checkpoint_schema_invalid';
          expect(stored, name).toBe(expected);
        }
      }),
      { numRuns: 60 },
    );
    for (const { writer } of writers) await writer.close();
  });

  it('a schema that validates asynchronously fails with checkpoint_config_invalid, nothing saved', async () => {
    const storage = memoryStorage();
    const schema = v.pipeAsync(
      v.object({ step: v.number(), label: v.string() }),
      v.checkAsync(async () => true),
    );
    const writer = createWriter({ storage, profile: jsonProfile<Step>({ schema }), runId: 'a', heartbeatIntervalMs: false });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 1, label: 'x' } });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_config_invalid');
    await writer.close();
    expect(await listAll(storage, '')).toHaveLength(0);
  });

  it('a value that is not a schema is refused by defineProfile and jsonProfile', () => {
    expect(() => jsonProfile({ schema: { parse: () => 1 } as never })).toThrow(/Standard Schema/);
    const notSchema = () => defineProfile({ ...defaultProfile, name: 'x', payload: z3.object({}).parse as never });
    expect(notSchema).toThrow();
    try {
      notSchema();
    } catch (err) {
      expect(isCheckpointError(err, 'checkpoint_config_invalid')).toBe(true);
    }
  });

  it("createWriter without a profile writes the default profile's documents", async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, runId: 'd', heartbeatIntervalMs: false });
    expect(writer.profile).toBe(defaultProfile);
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    expect(r.ok).toBe(true);
    await writer.close();
    const snap = r.ok ? await readSnapshot(storage, defaultProfile, r.key) : undefined;
    expect(snap?.payload).toEqual({ step: 1 });
  });
});
