/**
 * A profile's own `newSnapshotId` that throws fails that checkpoint alone, with a result that
 * says so (the caller's promise settles), and the writer goes on with the next checkpoint,
 * numbering it where that one would have been.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage } from 'savepoint';

describe('a profile whose newSnapshotId throws', () => {
  it('fails that checkpoint with checkpoint_schema_invalid, and the next one is written', async () => {
    let calls = 0;
    const profile: typeof defaultProfile = {
      ...defaultProfile,
      newSnapshotId: (context) => {
        if (++calls === 2) throw new Error('no id today');
        return defaultProfile.newSnapshotId(context);
      },
    };
    const writer = createWriter({ storage: memoryStorage(), profile, runId: 'r', heartbeatIntervalMs: false });
    const first = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    const second = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    const third = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: 3 });
    expect(first.ok && first.sequence).toBe(1);
    expect(second.ok).toBe(false);
    expect(!second.ok && second.reasonCode).toBe('checkpoint_schema_invalid');
    expect(!second.ok && second.error.message).toContain('newSnapshotId');
    expect(third.ok && third.sequence).toBe(2);
    await writer.close();
  });
});
