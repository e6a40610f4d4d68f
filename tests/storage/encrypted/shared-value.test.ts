import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, encryptedStorage, EncryptionKey, listAll, memoryStorage } from 'savepoint';
import { sessionOf } from '../../../src/storage/encrypted/session.js';
import { openValue } from '../../../src/storage/encrypted/value-cipher.js';
import { sealBatchSync, sharedPartners } from '../../../src/storage/encrypted/batch-seal.js';
import { SHARED_FORMAT, SINGLE_KEY_FORMAT } from '../../../src/storage/encrypted/value-format.js';
import { rejection } from '../../support/rejection.js';

// A checkpoint puts one buffer to its history file and to `latest`: the encrypted store seals
// it once (format 2) and stores the same bytes under both keys, bound to exactly those two.

const FORMAT_AT = 3;

describe('shared values: one sealing for two keys of a batch', () => {
  it('property: both keys read the value back; a third key, any changed byte, or another store is caught; listings give plaintext sizes', async () => {
    const key = EncryptionKey.generate();
    const names = fc.stringMatching(/^k[a-z0-9_]{0,10}(\/k[a-z0-9_]{0,10}){0,3}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 800 }),
        fc.uniqueArray(names, { minLength: 3, maxLength: 3 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async (value, [a, b, third], at, flip) => {
          const inner = memoryStorage();
          const store = encryptedStorage(inner, { keys: key });
          await store.batch!([
            { type: 'put', key: a!, bytes: value },
            { type: 'put', key: b!, bytes: value },
          ]);
          const stored = (await inner.get(a!))!.bytes;
          expect(stored[FORMAT_AT]).toBe(SHARED_FORMAT);
          expect((await inner.get(b!))!.bytes).toEqual(stored);
          expect(stored.length).toBe(value.length + 40);
          const reopened = encryptedStorage(inner, { keys: [EncryptionKey.generate(), key] });
          expect((await reopened.get(a!))!.bytes).toEqual(value);
          expect((await reopened.get(b!))!.bytes).toEqual(value);
          for (const e of await listAll(reopened, '')) expect(e.size).toBe(value.length);
          await inner.put(third!, stored);
          expect((await rejection(reopened.get(third!))).reasonCode).toBe('checkpoint_integrity_mismatch');
          const changed = stored.slice();
          changed[at % changed.length]! ^= flip;
          await inner.put(a!, changed);
          expect((await rejection(reopened.get(a!))).reasonCode).toBe('checkpoint_integrity_mismatch');
          // The same bytes in another store (another data key) open in neither key.
          const foreign = memoryStorage();
          const otherStore = encryptedStorage(foreign, { keys: key });
          await otherStore.put('x', new Uint8Array(1));
          await foreign.put(b!, stored);
          expect((await rejection(otherStore.get(b!))).reasonCode).toBe('checkpoint_integrity_mismatch');
        },
      ),
      { numRuns: 80 },
    );
  });

  it('a checkpoint stores its history file and latest as one shared value, and every checkpoint reads back', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    const writer = createWriter({ storage: store, runId: 'run-1', heartbeatIntervalMs: false });
    for (let i = 0; i < 3; i++) {
      const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: i } });
      expect(r.ok).toBe(true);
    }
    await writer.close();
    const latest = (await inner.get('checkpoints/run-1/latest.json'))!.bytes;
    expect(latest[FORMAT_AT]).toBe(SHARED_FORMAT);
    const history = (await listAll(inner, 'checkpoints/run-1/history/')).map((e) => e.key);
    // The newest by the id latest names: ids made in one millisecond do not list in the order they were made.
    const { snapshot_id } = JSON.parse(new TextDecoder().decode((await store.get('checkpoints/run-1/latest.json'))!.bytes)) as {
      snapshot_id: string;
    };
    const newest = (await inner.get(history.find((k) => k.includes(snapshot_id))!))!.bytes;
    expect(newest).toEqual(latest);
    for (const k of history) expect(JSON.parse(new TextDecoder().decode((await store.get(k))!.bytes))).toBeTypeOf('object');
  });

  it('a put, and a batch of distinct buffers, still write format 1; equal bytes in two buffers are not shared', async () => {
    const inner = memoryStorage();
    const store = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await store.put('p', new Uint8Array([1, 2, 3]));
    await store.batch!([
      { type: 'put', key: 'a', bytes: new Uint8Array([4]) },
      { type: 'put', key: 'b', bytes: new Uint8Array([4]) },
    ]);
    for (const k of ['p', 'a', 'b']) expect((await inner.get(k))!.bytes[FORMAT_AT]).toBe(SINGLE_KEY_FORMAT);
  });

  it('pairs each put with at most one other put of its buffer, under another key', () => {
    const x = new Uint8Array(1);
    const y = new Uint8Array(1);
    const put = (key: string, bytes: Uint8Array) => ({ type: 'put' as const, key, bytes });
    expect([...sharedPartners([put('a', x), { type: 'delete', key: 'd' }, put('b', x), put('c', x), put('e', y)])]).toEqual([
      2, -1, 0, -1, -1,
    ]);
    expect([...sharedPartners([put('a', x), put('a', x)])]).toEqual([-1, -1]);
    expect([...sharedPartners([put('a', x), put('b', x), put('c', x), put('d', x)])]).toEqual([1, 0, 3, 2]);
  });

  it('property: partners are symmetric puts of one buffer under two keys, in small and large batches alike', () => {
    const buffers = [new Uint8Array(1), new Uint8Array(1), new Uint8Array(2)];
    const op = fc.record({ type: fc.constantFrom('put', 'put', 'delete'), key: fc.constantFrom('a', 'b', 'c', 'd'), buf: fc.nat(2) });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 20 }), (ops) => {
        const batch = ops.map((o) =>
          o.type === 'put' ? { type: 'put' as const, key: o.key, bytes: buffers[o.buf]! } : { type: 'delete' as const, key: o.key },
        );
        const partner = sharedPartners(batch);
        partner.forEach((j, i) => {
          if (j === -1) return;
          const [a, b] = [batch[i]!, batch[j]!];
          expect(partner[j]).toBe(i);
          expect(a.type === 'put' && b.type === 'put' && a.bytes === b.bytes && a.key !== b.key).toBe(true);
        });
        // A writer's pair, first in any batch, is always found.
        const withPair = [
          { type: 'put' as const, key: 'h', bytes: buffers[0]! },
          { type: 'put' as const, key: 'l', bytes: buffers[0]! },
          ...batch,
        ];
        expect(sharedPartners(withPair)[0]).toBe(1);
      }),
    );
  });

  it('a shared value sealed on Node opens through WebCrypto, under both keys only', async () => {
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    const native = await sessionOf('0123456789abcdef', dataKey, true);
    const web = await sessionOf('0123456789abcdef', dataKey, false);
    const value = crypto.getRandomValues(new Uint8Array(300));
    const [first, second] = sealBatchSync(native, [
      { type: 'put', key: 'k/history/a.json', bytes: value },
      { type: 'put', key: 'k/latest.json', bytes: value },
    ]) as { bytes: Uint8Array }[];
    expect(first!.bytes).toBe(second!.bytes);
    expect(await openValue(web, 'k/history/a.json', first!.bytes)).toEqual(value);
    expect(await openValue(web, 'k/latest.json', first!.bytes)).toEqual(value);
    await expect(openValue(web, 'k/index.json', first!.bytes)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('a format 1 value written before shared values existed still opens, and only under its key', async () => {
    // Written by a put of the previous release (format 1, unchanged): its keyring and value.
    const raw = Uint8Array.from({ length: 32 }, (_, i) => 7 * i + 1);
    const keyring =
      '{"cipher":"AES-256-GCM","data_key_id":"cee9f64f0d6f8eeb","format":"savepoint-keyring","version":1,"wraps":[{"key_id":"bc5c982ebbed8569",' +
      '"nonce":"djDpXd7E5pAIoaRT","wrapped":"7B3HJDjWQdrKAyKCJD8971BFU5Ba0k7jZ7KprnrjYFz/4objzP/OPfVcQqUcR/KW"}]}';
    const value =
      '73706501cee9f64f0d6f8eeb0bda95714af34fae98c205b7540707c5b0d9796a89e582f7a528ab8d5abfc4189abf42aca52ceba76a955d60983babf2';
    const inner = memoryStorage();
    await inner.put('savepoint-keyring.json', new TextEncoder().encode(keyring));
    const bytes = Uint8Array.from(value.match(/../g)!, (h) => Number.parseInt(h, 16));
    await inner.put('checkpoints/run-1/latest.json', bytes);
    await inner.put('checkpoints/run-1/other.json', bytes);
    const store = encryptedStorage(inner, { keys: EncryptionKey.fromBytes(raw) });
    expect(new TextDecoder().decode((await store.get('checkpoints/run-1/latest.json'))!.bytes)).toBe('{"format":"one key"}');
    expect((await listAll(store, 'checkpoints/run-1/latest')).map((e) => e.size)).toEqual([20]);
    expect((await rejection(store.get('checkpoints/run-1/other.json'))).reasonCode).toBe('checkpoint_integrity_mismatch');
  });

  it('a shared value of a fixed key (known answer for format 2: SipHash name tags, tag order) opens under its two keys only', async () => {
    const raw = Uint8Array.from({ length: 32 }, (_, i) => 7 * i + 1);
    const keyring =
      '{"cipher":"AES-256-GCM","data_key_id":"cee9f64f0d6f8eeb","format":"savepoint-keyring","version":1,"wraps":[{"key_id":"bc5c982ebbed8569",' +
      '"nonce":"djDpXd7E5pAIoaRT","wrapped":"7B3HJDjWQdrKAyKCJD8971BFU5Ba0k7jZ7KprnrjYFz/4objzP/OPfVcQqUcR/KW"}]}';
    const value = '737065029d81007d1f30c4406ecbf9c1d417cddd9c778b28c2ffcf4eb7c9d3e2e4b0d531810d4748b061b78e59d586bc2dd19841f13e4f30feda80';
    const inner = memoryStorage();
    await inner.put('savepoint-keyring.json', new TextEncoder().encode(keyring));
    const bytes = Uint8Array.from(value.match(/../g)!, (h) => Number.parseInt(h, 16));
    const keys = ['checkpoints/run-1/history/cp_1.json', 'checkpoints/run-1/latest.json', 'checkpoints/run-1/index.json'];
    for (const k of keys) await inner.put(k, bytes);
    const store = encryptedStorage(inner, { keys: EncryptionKey.fromBytes(raw) });
    for (const k of keys.slice(0, 2)) expect(new TextDecoder().decode((await store.get(k))!.bytes)).toBe('{"format":"shared"}');
    expect((await rejection(store.get(keys[2]!))).reasonCode).toBe('checkpoint_integrity_mismatch');
  });
});
