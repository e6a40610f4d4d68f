import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWriter, encryptedStorage, EncryptionKey, isCheckpointError, listAll, planResume, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { faultyStorage, type FaultAction } from 'savepoint/testing';
import { scratchFolder } from '../../support/scratch.js';

// A failure or a crash at every storage operation of an encrypted fs store — while checkpoints
// are written, and while the user's key is rotated — never leaves a checkpoint unreadable.
const base = scratchFolder('encrypted-faults');
let n = 0;
const ACTIONS: readonly FaultAction[] = ['fail', 'fail-after', 'crash', 'crash-after'];

/** Every value of the store read through `keys`: the keys that opened, and those that did not (with their reason codes). */
async function readAll(dir: string, keys: readonly EncryptionKey[]): Promise<{ read: string[]; failed: string[] }> {
  const store = encryptedStorage(fsStorage({ dir }), { keys });
  const read: string[] = [];
  const failed: string[] = [];
  try {
    for (const { key } of await listAll(store, '')) {
      await store.get(key).then(
        () => read.push(key),
        (err: unknown) => failed.push(`${key}: ${isCheckpointError(err) ? err.reasonCode : String(err)}`),
      );
    }
  } finally {
    await store.close();
  }
  return { read, failed };
}

async function checkpoints(storage: StorageAdapter, count: number): Promise<number> {
  // Retries run as usual, without the waits between them: no fault here heals with time.
  const writer = createWriter({ storage, runId: 'run-1', heartbeatIntervalMs: false, lock: false, retryBaseMs: 0 });
  let acknowledged = 0;
  try {
    for (let i = 1; i <= count; i++) {
      const r = await writer.checkpoint({
        source: 'step_boundary',
        status: 'in_progress',
        payload: { step: i, secret: `tool output ${i}` },
      });
      if (r.ok) acknowledged = r.sequence;
    }
  } catch {
    // a crashed store: what was acknowledged before stays
  }
  await writer.close().catch(() => undefined);
  return acknowledged;
}

describe('encrypted fs store: a fault at every operation', () => {
  it('while writing checkpoints: every stored value opens, and resume finds the last acknowledged checkpoint', async () => {
    const key = EncryptionKey.generate();
    // Count the operations of a clean run first.
    const clean = faultyStorage(fsStorage({ dir: join(base, `clean-${n++}`) }));
    await checkpoints(encryptedStorage(clean, { keys: key }), 4);
    const total = clean.count;
    expect(total).toBeGreaterThan(5);
    for (let at = 0; at < total; at++) {
      for (const action of ACTIONS) {
        const dir = join(base, `w-${n++}`);
        const faulty = faultyStorage(fsStorage({ dir }), { at, action });
        const acknowledged = await checkpoints(encryptedStorage(faulty, { keys: key }), 4);
        const { failed } = await readAll(dir, [key]);
        expect(failed, `fault ${action} at operation ${at}`).toEqual([]);
        if (acknowledged > 0) {
          const store = encryptedStorage(fsStorage({ dir }), { keys: key });
          const plan = await planResume({ storage: store, runId: 'run-1', profile: (await import('savepoint')).defaultProfile });
          expect(plan.snapshot.sequence, `fault ${action} at operation ${at}`).toBeGreaterThanOrEqual(acknowledged);
          await store.close();
        }
      }
    }
  }, 600_000);

  it('while rotating the key: every checkpoint opens with the old key or the new one, and always with both', async () => {
    const old = EncryptionKey.generate();
    const next = EncryptionKey.generate();
    const seed = async (dir: string): Promise<void> => {
      await checkpoints(encryptedStorage(fsStorage({ dir }), { keys: old }), 3);
    };
    const cleanDir = join(base, `r-clean-${n++}`);
    await seed(cleanDir);
    const clean = faultyStorage(fsStorage({ dir: cleanDir }));
    await encryptedStorage(clean, { keys: old }).keyring.rotate(next);
    const total = clean.count;
    for (let at = 0; at < total; at++) {
      for (const action of ACTIONS) {
        const dir = join(base, `r-${n++}`);
        await seed(dir);
        const faulty = faultyStorage(fsStorage({ dir }), { at, action });
        const rotated = await encryptedStorage(faulty, { keys: old })
          .keyring.rotate(next)
          .then(
            () => true,
            () => false,
          );
        const withOld = await readAll(dir, [old]);
        const withNew = await readAll(dir, [next]);
        const withBoth = await readAll(dir, [old, next]);
        const where = `fault ${action} at operation ${at}`;
        expect(withBoth.failed, where).toEqual([]);
        expect(withBoth.read.length, where).toBeGreaterThan(0);
        // All with the old key, or all with the new one: a key opens the store's one data key or it does not.
        expect(withOld.failed.length === 0 || withNew.failed.length === 0, where).toBe(true);
        if (rotated) expect(withNew.failed, where).toEqual([]);
      }
    }
  }, 600_000);
});
