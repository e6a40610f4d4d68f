/**
 * A store file of 2 GiB or more used to abort the reading process (Node's read length is a
 * 32-bit integer: `Assertion failed: args[3]->IsInt32()`, SIGABRT, uncatchable), and a plain file
 * under that was read whole before any size check. Now a file over the profile's limit (or the
 * store's `maxReadBytes`) is refused from its size, unread: a real child process resumes a run
 * whose `latest.json` and one history file are 2.1 GiB sparse files (no disk used), exits
 * normally, resumes from the newest sound file and reports the huge ones as
 * `checkpoint_too_large`, in bounded memory (DESIGN invariant 9).
 */
import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { scratchDirs } from '../../support/scratch.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./huge-file-child.ts', import.meta.url));
const HUGE = Math.floor(2.1 * 1024 * 1024 * 1024);
const newDir = scratchDirs('huge-file');

/** Makes `path` a sparse file of `bytes` (ftruncate: no block is written). */
async function sparse(path: string, bytes: number): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await fh.truncate(bytes);
  } finally {
    await fh.close();
  }
}

function runChild(args: readonly string[]): Promise<{ code: number | null; signal: string | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}

describe('a huge file in an fs store', () => {
  it('a 2.1 GiB latest.json and history file: the reader exits normally, refuses them unread and resumes from the newest sound file', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir, layout: 'files' });
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'r', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    for (let i = 1; i <= 3; i++) {
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } });
      expect(r.ok).toBe(true);
    }
    await writer.close();
    await storage.close();
    const latestKey = defaultProfile.layout.latestKey('r');
    // A history file that names a newer snapshot than any sound one: the scan must meet it.
    const hugeHistory = defaultProfile.layout.historyKey!({
      runId: 'r',
      sequence: 9,
      id: 'cp_20991231T000000Z_zzzzzz',
      source: 'step_boundary',
    });
    await sparse(join(dir, latestKey), HUGE);
    await sparse(join(dir, hugeHistory), HUGE);

    const r = await runChild([dir, 'r', latestKey]);
    expect(r.signal, r.err).toBeNull();
    expect(r.code, r.err).toBe(0);
    const got = JSON.parse(r.out) as {
      resumed: { sequence: number; skipped: { key: string; reasonCode: string }[] };
      get: { reasonCode: string; message: string; details: Record<string, unknown> };
      maxRssBytes: number;
    };
    expect(got.resumed.sequence).toBe(3);
    expect(got.resumed.skipped).toEqual(
      expect.arrayContaining([
        { key: latestKey, reasonCode: 'checkpoint_too_large' },
        { key: hugeHistory, reasonCode: 'checkpoint_too_large' },
      ]),
    );
    // A plain get: the store's own limit (maxReadBytes, 1 GiB by default) refuses it, naming the key and the limit.
    expect(got.get.reasonCode).toBe('checkpoint_too_large');
    expect(got.get.message).toContain(latestKey);
    expect(got.get.details).toMatchObject({ key: latestKey, bytes: HUGE, limit: 1024 * 1024 * 1024 });
    // Nothing huge was read: a Node process with tsx peaks near 150 MB; reading the file would take 2.1 GB.
    expect(got.maxRssBytes).toBeLessThan(512 * 1024 * 1024);
  }, 120_000);
});
