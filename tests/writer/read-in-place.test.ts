import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createWriter, type Profile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { scratchDirs } from '../support/scratch.js';

const newDir = scratchDirs('read-in-place');
const fixtures = fileURLToPath(new URL('../fixtures/resume/', import.meta.url));

const cases = [
  {
    profile: phasedWorkflow as Profile<unknown>,
    runId: '9f0d4c2e-6b1a-4d3e-8f2a-1c2b3d4e5f60',
    payload: 'phased-workflow.payload.json',
    source: 'expensive_op',
  },
  {
    profile: snapshotLifecycle as Profile<unknown>,
    runId: 'session-1',
    payload: 'snapshot-lifecycle.payload.json',
    source: 'step_boundary',
  },
] as const;

describe('profiles whose files other tools read (sharedFiles) on fsStorage’s default journal', () => {
  it('fsStorage({ dir }) writes through its journal by default; journal: false is direct mode', () => {
    expect(fsStorage({ dir: newDir() }).capabilities.atomicBatch).toBe(true);
    expect(fsStorage({ dir: newDir(), journal: false }).capabilities.atomicBatch).toBe(false);
  });

  it.each(cases)(
    '$profile.name: the moment a checkpoint is acknowledged, its latest and history files are on disk',
    async ({ profile, runId, payload, source }) => {
      expect(profile.sharedFiles).toBeDefined();
      const dir = newDir();
      const storage = fsStorage({ dir });
      const writer = createWriter({ storage, profile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
      const state = JSON.parse(readFileSync(join(fixtures, payload), 'utf8')) as unknown;
      for (let n = 1; n <= 3; n++) {
        const result = await writer.checkpoint({ source, status: 'in_progress', payload: state });
        if (!result.ok) throw result.error;
        // Read as another tool would, straight from the directory, before anything else runs.
        expect(readFileSync(join(dir, profile.layout.latestKey(runId)), 'utf8')).toContain(result.snapshotId);
        const runDir = profile.layout.latestKey(runId).split('/').slice(0, -1).join('/');
        let files = 0;
        for await (const entry of storage.list(`${runDir}/`)) {
          expect(existsSync(join(dir, entry.key)), entry.key).toBe(true);
          files++;
        }
        expect(files).toBeGreaterThan(n);
      }
      await writer.close();
      await storage.close();
    },
  );
});
