import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  encryptedStorage,
  EncryptionKey,
  isCheckpointError,
  listAll,
  memoryStorage,
  planResume,
  type StorageAdapter,
} from 'savepoint';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { sha256Hex } from '../../../src/codec/sha256.js';
import { rejection } from '../../support/rejection.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Copies `key`'s stored bytes in `inner` through `edit`. */
async function edit(inner: StorageAdapter, key: string, change: (bytes: Uint8Array) => Uint8Array): Promise<void> {
  const stored = (await inner.get(key))!;
  await inner.put(key, change(stored.bytes.slice()));
}

describe('encryptedStorage: confidentiality and integrity of every value', () => {
  it('property: random values and keys read back exactly; every single-byte change and every move to another key is caught', async () => {
    const key = EncryptionKey.generate();
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 600 }),
        fc.constantFrom('checkpoints/r/latest.json', 'checkpoints/r/history/cp_1.json', 'a'),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async (value, name, at, flip) => {
          const inner = memoryStorage();
          const store = encryptedStorage(inner, { keys: [EncryptionKey.generate(), key].slice(at % 2) });
          await store.put(name, value);
          expect((await store.get(name))!.bytes).toEqual(value);
          // The right key, in a new instance (another process), reads it back too.
          const other = encryptedStorage(inner, { keys: [EncryptionKey.generate(), key, EncryptionKey.generate()] });
          if (at % 2 === 1) expect((await other.get(name))!.bytes).toEqual(value);
          const stored = (await inner.get(name))!.bytes;
          expect(stored.length).toBe(value.length + 40);
          // One byte changed, anywhere.
          await edit(inner, name, (b) => ((b[at % b.length]! ^= flip), b));
          expect((await rejection(store.get(name))).reasonCode).toBe('checkpoint_integrity_mismatch');
          // The original bytes, moved under another name.
          await inner.put('moved/elsewhere.json', stored);
          expect((await rejection(store.get('moved/elsewhere.json'))).reasonCode).toBe('checkpoint_integrity_mismatch');
        },
      ),
      { numRuns: 120 },
    );
  });

  it('stores nothing of the plaintext: no fragment, no unkeyed hash, in any stored byte', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    const secret = 'the-api-key-a-tool-returned-7f3e9a';
    const writer = createWriter({ storage: store, runId: 'run-1' });
    const result = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { note: secret } });
    await writer.close();
    expect(result.ok).toBe(true);
    const hash = await sha256Hex(utf8(secret));
    const checksum = result.ok ? result.snapshot.integrity.checksum : '';
    for (const entry of await listAll(inner, '')) {
      const text = new TextDecoder('latin1').decode((await inner.get(entry.key))!.bytes);
      expect(text).not.toContain(secret.slice(0, 8));
      expect(text).not.toContain(hash.slice(0, 16));
      expect(text).not.toContain(checksum.slice(0, 16));
      expect(text).not.toContain('"status"');
    }
  });

  it('a wrong key, or none, is checkpoint_encryption_key_missing naming the key id the store needs', async () => {
    const inner = memoryStorage();
    const right = EncryptionKey.generate();
    const store = encryptedStorage(inner, { keys: right });
    await store.put('x', utf8('hello'));
    const needed = (await store.keyring.list()).keys[0]!.keyId;
    const wrong = await rejection(encryptedStorage(inner, { keys: EncryptionKey.generate() }).get('x'));
    expect(wrong.reasonCode).toBe('checkpoint_encryption_key_missing');
    expect(wrong.message).toContain(needed);
    expect(wrong.details.needs_key_ids).toEqual([needed]);
    const none = await rejection(encryptedStorage(inner, { keys: [] }).get('x'));
    expect(none.reasonCode).toBe('checkpoint_encryption_key_missing');
    expect(none.message).toContain(needed);
    // Writing with a wrong key fails the same way, and writes nothing.
    expect((await rejection(encryptedStorage(inner, { keys: EncryptionKey.generate() }).put('y', utf8('z')))).reasonCode).toBe(
      'checkpoint_encryption_key_missing',
    );
    expect(await inner.get('y')).toBeUndefined();
  });

  it('a value whose keyring is gone names the data key it needs', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await store.put('x', utf8('hello'));
    await inner.delete('savepoint-keyring.json');
    const err = await rejection(encryptedStorage(inner, { keys: EncryptionKey.generate() }).get('x'));
    expect(err.reasonCode).toBe('checkpoint_encryption_key_missing');
    expect(err.message).toContain('no keyring');
  });

  it('a plain value under an encrypted store is checkpoint_integrity_mismatch, not read as if it were trusted', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await store.put('x', utf8('hello'));
    await inner.put('plain.json', utf8('{"status":"completed"}'));
    expect((await rejection(store.get('plain.json'))).reasonCode).toBe('checkpoint_integrity_mismatch');
  });

  it('property: any changed byte of the keyring is caught; no change opens the store with another data key', async () => {
    const key = EncryptionKey.generate();
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: key });
    await store.put('x', utf8('hello'));
    const keyring = (await inner.get('savepoint-keyring.json'))!.bytes;
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: keyring.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, flip) => {
        const changed = keyring.slice();
        changed[at]! ^= flip;
        await inner.put('savepoint-keyring.json', changed);
        const fresh = encryptedStorage(inner, { keys: key });
        const outcome = await fresh.get('x').then(
          (v) => new TextDecoder().decode(v!.bytes),
          (err: unknown) => (isCheckpointError(err) ? err.reasonCode : 'other'),
        );
        // A byte of JSON whitespace-free canonical text may change meaningfully or not at all
        // (a hex digit's case in a key id is not accepted): either it opens to the same value or it is refused.
        expect(['hello', 'checkpoint_integrity_mismatch', 'checkpoint_encryption_key_missing']).toContain(outcome);
      }),
      { numRuns: 150 },
    );
  });

  it('hides its keyring from listings and refuses its name as a key', async () => {
    const store = encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() });
    await store.put('a', utf8('1'));
    expect((await listAll(store, '')).map((e) => e.key)).toEqual(['a']);
    expect((await listAll(store, '')).map((e) => e.size)).toEqual([1]);
    expect((await rejection(store.put('savepoint-keyring.json', utf8('x')))).reasonCode).toBe('checkpoint_key_invalid');
    expect((await rejection(store.get('savepoint-keyring.json'))).reasonCode).toBe('checkpoint_key_invalid');
  });
});

describe('encryptedStorage: keys', () => {
  it('several keys read; rotation re-wraps the data key and rewrites no checkpoint', async () => {
    const inner = memoryStorage();
    const old = EncryptionKey.generate();
    const store = encryptedStorage(inner, { keys: old });
    await store.put('cp', utf8('state'));
    const before = (await inner.get('cp'))!;
    const next = EncryptionKey.generate();
    const { added, removed } = await store.keyring.rotate(next);
    expect(removed).toHaveLength(1);
    expect((await inner.get('cp'))!.version).toBe(before.version);
    expect((await encryptedStorage(inner, { keys: next }).get('cp'))!.bytes).toEqual(utf8('state'));
    expect((await rejection(encryptedStorage(inner, { keys: old }).get('cp'))).reasonCode).toBe('checkpoint_encryption_key_missing');
    // During a roll-out both keys are given; the new one is listed as given.
    const both = encryptedStorage(inner, { keys: [old, next] });
    expect((await both.get('cp'))!.bytes).toEqual(utf8('state'));
    expect((await both.keyring.list()).keys).toEqual([{ keyId: added, kind: 'raw', given: true }]);
  });

  it('add and remove; the last key cannot be removed', async () => {
    const store = encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() });
    await store.put('cp', utf8('state'));
    const first = (await store.keyring.list()).keys[0]!.keyId;
    const second = await store.keyring.add(EncryptionKey.generate());
    expect((await store.keyring.list()).keys.map((k) => k.keyId)).toEqual([first, second]);
    await store.keyring.remove(first);
    expect((await rejection(store.keyring.remove(second))).reasonCode).toBe('checkpoint_unsupported');
    expect((await rejection(store.keyring.remove('0000000000000000'))).reasonCode).toBe('checkpoint_not_found');
  });

  it('a passphrase key (PBKDF2-SHA-256, its salt and iterations stored with its wrap) opens the store; a wrong passphrase does not', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.fromPassphrase('correct horse battery', { iterations: 10_000 }) });
    await store.put('cp', utf8('state'));
    const again = encryptedStorage(inner, { keys: 'passphrase:correct horse battery' });
    expect((await again.get('cp'))!.bytes).toEqual(utf8('state'));
    const wrong = await rejection(
      encryptedStorage(inner, { keys: EncryptionKey.fromPassphrase('wrong horse battery', { iterations: 10_000 }) }).get('cp'),
    );
    expect(wrong.reasonCode).toBe('checkpoint_encryption_key_missing');
    expect(new TextDecoder().decode((await inner.get('savepoint-keyring.json'))!.bytes)).toContain('"iterations":10000');
  });

  it('key text: hex and base64 of 32 bytes name the same key; anything else is refused without echoing it', async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const hexText = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    const inner = memoryStorage();
    await encryptedStorage(inner, { keys: hexText }).put('a', utf8('1'));
    expect((await encryptedStorage(inner, { keys: Buffer.from(bytes).toString('base64') }).get('a'))!.bytes).toEqual(utf8('1'));
    expect((await encryptedStorage(inner, { keys: bytes }).get('a'))!.bytes).toEqual(utf8('1'));
    expect(EncryptionKey.toText(EncryptionKey.fromText(hexText))).toBe(hexText);
    let caught: unknown;
    try {
      EncryptionKey.fromText('not-a-key-hunter2');
    } catch (err) {
      caught = err;
    }
    expect(isCheckpointError(caught, 'checkpoint_config_invalid')).toBe(true);
    expect(String((caught as Error).message)).not.toContain('hunter2');
  });

  it('content ids are keyed: HMAC-SHA-256 under the data key, equal within a store, different across stores, never the plain SHA-256', async () => {
    const a = encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() });
    const b = encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() });
    const chunk = utf8('a chunk of conversation');
    const id = await a.contentAddressing.id(chunk);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(await a.contentAddressing.id(chunk)).toBe(id);
    expect(await b.contentAddressing.id(chunk)).not.toBe(id);
    expect(id).not.toBe(await sha256Hex(chunk));
    expect(a.contentAddressing.scheme).toBe('hmac-sha256');
  });
});

describe('encryptedStorage: profiles whose files other tools read', () => {
  it('the writer and resume refuse a spec profile on an encrypted store, saying why, unless the store accepts it', async () => {
    const store = encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() });
    let refused: unknown;
    try {
      createWriter({ storage: store, profile: snapshotLifecycle, runId: 'run-1' });
    } catch (err) {
      refused = err;
    }
    expect(isCheckpointError(refused, 'checkpoint_unsupported')).toBe(true);
    expect((refused as Error).message).toContain('other tools read');
    expect((await rejection(planResume({ storage: store, profile: snapshotLifecycle, runId: 'run-1' }))).reasonCode).toBe(
      'checkpoint_unsupported',
    );

    const accepted = encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate(), sharedFiles: 'accept' });
    const writer = createWriter({ storage: accepted, profile: snapshotLifecycle, runId: 'run-1' });
    await writer.close();
  });
});

describe('encryptedStorage: capabilities', () => {
  it("carries the inner store's buffering members and never its synchronous ones (they would bypass encryption)", async () => {
    const { isSynchronousStorage } = await import('../../../src/contract/synchronous-storage.js');
    const inner = memoryStorage();
    expect(isSynchronousStorage(inner)).toBe(true);
    const over = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    expect(isSynchronousStorage(over)).toBe(false);
    expect('putNow' in over).toBe(false);
    const flushed: string[] = [];
    const buffered = {
      ...memoryStorage(),
      flush: async () => void flushed.push('flush'),
      isPending: (key: string) => key === 'held',
      rateBudget: () => ({ remaining: 5, limit: 5000, resetAtMs: 0, low: true }),
    };
    const wrapped = encryptedStorage(buffered, { keys: EncryptionKey.generate() });
    await wrapped.flush!();
    expect(flushed).toEqual(['flush']);
    expect(wrapped.isPending!('held')).toBe(true);
    expect(wrapped.rateBudget!().low).toBe(true);
    expect(wrapped.capabilities).toMatchObject({ atomicBatch: true, opaqueValues: true });
  });
});
