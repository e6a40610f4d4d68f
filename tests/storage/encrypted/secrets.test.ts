import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, encryptedStorage, EncryptionKey, memoryStorage, planResume, defaultProfile } from 'savepoint';
import { deepStrings } from '../../support/github.js';

// DESIGN invariant 6 for encrypted stores: whatever goes wrong — a wrong key, a wrong
// passphrase, bad key text, a changed value or keyring, a value moved, a failed rotation —
// no error (deep: message, stack, details, causes, inspect), no writer event and no key object
// printed holds a key (hex or base64), a passphrase, or a fragment of the plaintext.
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

async function caught(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** Everything a failure could show a person or a log. */
function shown(values: readonly unknown[]): string {
  return values.map((v) => [...deepStrings(v), inspect(v, { depth: 8, showHidden: true }), String(v)].join('\n')).join('\n');
}

describe('no key, passphrase or plaintext in any error, event or printed key', () => {
  it('property', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.string({ minLength: 4, maxLength: 20 }).map((s) => `pass-${s}-phrase`),
        fc.string({ minLength: 4, maxLength: 30 }).map((s) => `PLAINTEXT<${s}>`),
        fc.nat(),
        async (rightBytes, wrongBytes, passphrase, plaintext, at) => {
          const right = EncryptionKey.fromBytes(rightBytes);
          const wrong = EncryptionKey.fromBytes(wrongBytes);
          const inner = memoryStorage();
          const store = encryptedStorage(inner, { keys: right });
          const events: unknown[] = [];
          const writer = createWriter({ storage: store, runId: 'run-1', heartbeatIntervalMs: false });
          for (const name of ['error', 'retry', 'opened', 'closed'] as const) writer.on(name, (e: unknown) => events.push(e));
          await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { text: plaintext } });
          await writer.close();
          await store.put('raw/value', utf8(plaintext));
          const stored = (await inner.get('raw/value'))!.bytes;

          const failures: unknown[] = [
            await caught(() => encryptedStorage(inner, { keys: wrong }).get('raw/value')),
            await caught(() => encryptedStorage(inner, { keys: wrong }).put('raw/other', utf8(plaintext))),
            await caught(() => planResume({ storage: encryptedStorage(inner, { keys: wrong }), profile: defaultProfile, runId: 'run-1' })),
            await caught(() =>
              encryptedStorage(inner, { keys: EncryptionKey.fromPassphrase(passphrase, { iterations: 10_000 }) }).get('raw/value'),
            ),
            await caught(() => EncryptionKey.fromText(`${hex(rightBytes)}0`)),
            await caught(() => EncryptionKey.fromText(passphrase)),
            await caught(() => EncryptionKey.fromPassphrase(passphrase.slice(0, 3))),
            await caught(() => encryptedStorage(inner, { keys: wrong }).keyring.rotate(right)),
            await caught(async () => {
              const changed = stored.slice();
              changed[at % changed.length]! ^= 1;
              await inner.put('raw/changed', changed);
              await store.get('raw/changed');
            }),
            await caught(async () => {
              await inner.put('raw/moved', stored);
              await store.get('raw/moved');
            }),
          ];
          expect(failures.filter((f) => f !== undefined).length).toBeGreaterThanOrEqual(9);
          const text = shown([...failures, ...events, right, wrong, EncryptionKey.fromPassphrase(passphrase, { iterations: 10_000 })]);
          for (const secret of [hex(rightBytes), b64(rightBytes), hex(wrongBytes), b64(wrongBytes), passphrase, plaintext])
            expect(text).not.toContain(secret);
        },
      ),
      { numRuns: 25 },
    );
  });
});
