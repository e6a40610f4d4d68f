import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sessionOf } from '../../../src/storage/encrypted/session.js';
import { openValue, sealValue } from '../../../src/storage/encrypted/value-cipher.js';

// Node encrypts synchronously (node:crypto through process.getBuiltinModule); browsers and edge
// runtimes through WebCrypto. Both write the same format: each opens what the other sealed.
describe('the synchronous (Node) and WebCrypto paths are one format', () => {
  it('property: a value sealed by either path opens by the other, and only under its own key name', async () => {
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    const native = await sessionOf('0123456789abcdef', dataKey, true);
    const web = await sessionOf('0123456789abcdef', dataKey, false);
    expect(native.sync).toBeDefined();
    expect(web.sync).toBeUndefined();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 3000 }), fc.boolean(), async (value, nativeSeals) => {
        const [sealer, opener] = nativeSeals ? [native, web] : [web, native];
        const sealed = await sealValue(sealer, 'k/a.json', value);
        expect(await openValue(opener, 'k/a.json', sealed)).toEqual(value);
        await expect(openValue(opener, 'k/b.json', sealed)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
      }),
      { numRuns: 100 },
    );
  });
});
