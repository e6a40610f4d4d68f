/**
 * `savepoint verify` checks every content chunk a document references (present, and matching its
 * id) and reports the ones no document references.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { runCli } from '../../src/cli/run.js';
import { captureIo } from '../support/cli-io.js';
import { CHUNK_PREFIX } from '../../src/codec/chunking.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface VerifyJson {
  problems: number;
  findings: { key: string; level: string; reasonCode: string; message: string }[];
}

const findingsAt = (json: VerifyJson, key: string): VerifyJson['findings'] => json.findings.filter((f) => f.key === key);

async function verify(dir: string): Promise<{ code: number; json: VerifyJson }> {
  const out = captureIo();
  const code = await runCli(['verify', '--json', '--dir', dir], out);
  return { code, json: JSON.parse(out.out) as VerifyJson };
}

describe('verify and content chunks', () => {
  it('reports a missing chunk, a damaged one and an unreferenced one, each by its key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-verify-chunks-'));
    dirs.push(dir);
    const storage = fsStorage({ dir });
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-a', heartbeatIntervalMs: false });
    const messages = Array.from({ length: 30 }, (_, i) => `message ${i} `.repeat(120));
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { messages } });
    if (!r.ok) throw r.error;
    await writer.close();
    expect((await verify(dir)).json.problems).toBe(0);

    const chunks = await listAll(storage, CHUNK_PREFIX);
    expect(chunks.length).toBeGreaterThan(3);
    // One fault at a time: a damaged node hides the chunks below it, which a missing one among them would be.
    const [gone, damaged] = [chunks[0]!.key, chunks[1]!.key];
    const goneBytes = (await storage.get(gone))!.bytes.slice();
    await storage.delete(gone);
    await storage.close();
    const missing = await verify(dir);
    expect(missing.code).not.toBe(0);
    expect(findingsAt(missing.json, gone).some((f) => f.level === 'problem' && f.message.startsWith('missing'))).toBe(true);

    const again = fsStorage({ dir });
    await again.put(gone, goneBytes);
    const bytes = (await again.get(damaged))!.bytes.slice();
    bytes[0]! ^= 1;
    await again.put(damaged, bytes);
    const stray = `${CHUNK_PREFIX}ab/ab${'0'.repeat(62)}`;
    await again.put(stray, new TextEncoder().encode('nobody refers to me'));
    await again.close();

    const { code, json } = await verify(dir);
    expect(code).not.toBe(0);
    expect(findingsAt(json, damaged).some((f) => f.level === 'problem' && f.reasonCode === 'checkpoint_integrity_mismatch')).toBe(true);
    expect(findingsAt(json, stray)).toEqual([expect.objectContaining({ level: 'warning', reasonCode: 'checkpoint_chunk_unreferenced' })]);
    // With a chunk damaged, what looks unreferenced may sit below it: verify does not send the user to prune it.
    for (const f of json.findings.filter((x) => x.reasonCode === 'checkpoint_chunk_unreferenced'))
      expect(f.message).toContain('the sweep frees nothing until every node reads');
  });
});

describe('prune and content chunks', () => {
  it('prune --apply sweeps: the chunks only a pruned checkpoint referenced are hidden, and verify finds nothing wrong', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-prune-chunks-'));
    dirs.push(dir);
    const storage = fsStorage({ dir });
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-a', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    for (let n = 0; n < 3; n++) {
      const messages = Array.from({ length: 30 }, (_, i) => `message ${n}.${i} `.repeat(100));
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { messages } });
      if (!r.ok) throw r.error;
    }
    await writer.close();
    await storage.close();
    const out = captureIo();
    expect(await runCli(['prune', '--apply', '--json', '--keep-last', '1', '--dir', dir], out)).toBe(0);
    const json = JSON.parse(out.out) as { chunks: { hidden: string[] } };
    expect(json.chunks.hidden.length).toBeGreaterThan(0);
    const { json: verified } = await verify(dir);
    expect(verified.problems).toBe(0);
  });
});
