import { describe, expect, it } from 'vitest';
import { createWriter, isCheckpointError, listAll, memoryStorage, planResume } from 'savepoint';

describe('content chunks are read within a bound', () => {
  it('a file under chunks/ larger than any chunk savepoint writes is refused unread, as a damaged chunk', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, runId: 'run-1', heartbeatIntervalMs: false });
    const notes = Array.from({ length: 40 }, (_, i) => `note ${i} `.repeat(60));
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { notes } })).ok).toBe(true);
    await writer.close();
    const chunk = (await listAll(storage, 'chunks/')).find((e) => !e.key.includes('.hidden-'));
    expect(chunk).toBeDefined();
    await storage.put(chunk!.key, new Uint8Array(2 << 20)); // 2 MiB planted where a chunk of at most a few KiB was
    const error = await planResume({ storage, runId: 'run-1' }).catch((e: unknown) => e);
    expect(isCheckpointError(error)).toBe(true);
    expect(JSON.stringify(error)).toMatch(/larger than any chunk savepoint writes/);
  });
});
