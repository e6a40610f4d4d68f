import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, encryptedStorage, EncryptionKey, memoryStorage, planResume } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { runIdOf } from 'savepoint/langgraph';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { RUN_ID_PATTERN } from '../../../src/contract/ids.js';
import { scratchFolder } from '../../support/scratch.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const base = scratchFolder('hidden-run-id');

describe('encryptedStorage.hiddenRunId', () => {
  it('property: a UUID v4 every profile accepts; the same name gives the same id with any key of the store, another name or another store another id', async () => {
    const inner = memoryStorage();
    const key = EncryptionKey.generate();
    const second = EncryptionKey.generate();
    const store = encryptedStorage(inner, { keys: key });
    await store.put('x', new Uint8Array([1]));
    await store.keyring.add(second);
    const again = encryptedStorage(inner, { keys: second });
    const other = encryptedStorage(memoryStorage(), { keys: key });
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }),
        fc.string({ minLength: 1 }),
        async (name, otherName) => {
          const id = await store.hiddenRunId(name);
          expect(id).toMatch(UUID_V4);
          expect(id).toMatch(RUN_ID_PATTERN);
          phasedWorkflow.assertRunId(id);
          defaultProfile.assertRunId(id);
          expect(await runIdOf(id, '')).toBe(id); // a LangGraph thread id used as it is
          expect(await again.hiddenRunId(name)).toBe(id);
          expect(await other.hiddenRunId(name)).not.toBe(id);
          if (otherName !== name) expect(await store.hiddenRunId(otherName)).not.toBe(id);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a run under a hidden id writes and resumes; no key name holds the name, its hex or its SHA-256', async () => {
    const dir = mkdtempSync(join(base, 'store-'));
    const key = EncryptionKey.generate();
    const name = 'alice@example.com/ticket-4711';
    const storage = encryptedStorage(fsStorage({ dir }), { keys: key });
    const runId = await storage.hiddenRunId(name);
    const writer = createWriter({ storage, runId, heartbeatIntervalMs: false });
    for (let step = 1; step <= 3; step++)
      await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step, name } });
    await writer.close();
    await storage.close();

    const reopened = encryptedStorage(fsStorage({ dir }), { keys: key });
    const plan = await planResume({ storage: reopened, runId: await reopened.hiddenRunId(name) });
    expect(plan.snapshot?.payload).toEqual({ step: 3, name });
    await reopened.close();

    const names = readdirSync(dir, { recursive: true }).map(String).join('\n');
    expect(names).toContain(runId);
    const utf8 = Buffer.from(name);
    for (const form of ['alice', utf8.toString('hex'), createHash('sha256').update(utf8).digest('hex').slice(0, 16)])
      expect(names).not.toContain(form);
  });

  it('refuses an empty name, and needs a key that opens the store', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await expect(store.hiddenRunId('')).rejects.toMatchObject({ reasonCode: 'checkpoint_config_invalid' });
    await store.put('x', new Uint8Array([1]));
    const wrong = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await expect(wrong.hiddenRunId('a')).rejects.toMatchObject({ reasonCode: 'checkpoint_encryption_key_missing' });
  });
});
