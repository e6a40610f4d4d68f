import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sessionOf } from '../../../src/storage/encrypted/session.js';
import { openValue, sealSharedSync, sealValue } from '../../../src/storage/encrypted/value-cipher.js';

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

  it('property: values sealed one after another through the native scratch buffer each open by WebCrypto, under their own key names only', async () => {
    // The native path writes each header and associated data into one scratch buffer: a sealing
    // must not change a value sealed before it, and non-ASCII key names go in as UTF-8.
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    const native = await sessionOf('0123456789abcdef', dataKey, true);
    const web = await sessionOf('0123456789abcdef', dataKey, false);
    const names = fc.string({ minLength: 1, maxLength: 60, unit: 'grapheme' });
    const item = fc.record({ value: fc.uint8Array({ maxLength: 2000 }), a: names, b: names, shared: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 6 }), async (items) => {
        const sealed = items.map(({ value, a, b, shared }) =>
          shared && a !== b ? sealSharedSync(native, a, b, value)! : (sealValue(native, a, value) as Uint8Array),
        );
        for (let i = 0; i < items.length; i++) {
          const { value, a, b, shared } = items[i]!;
          expect(await openValue(web, a, sealed[i]!)).toEqual(value);
          if (shared && a !== b) expect(await openValue(web, b, sealed[i]!)).toEqual(value);
          await expect(openValue(web, `${a}x`, sealed[i]!)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
        }
      }),
      { numRuns: 100 },
    );
  });

  it("small sealed values are cut from buffers that hold only sealed values (a view's .buffer shows no plaintext)", async () => {
    const native = await sessionOf('0123456789abcdef', crypto.getRandomValues(new Uint8Array(32)), true);
    const sealed: Uint8Array[] = [];
    const copies: Uint8Array[] = [];
    for (let i = 0; i < 80; i++) {
      // A recognisable plaintext of up to 2 KB: none of its bytes may show in a sealed value's buffer.
      const s = sealValue(native, `k/${i}.json`, new Uint8Array(1 + ((i * 97) % 2000)).fill(0xee)) as Uint8Array;
      sealed.push(s);
      copies.push(s.slice());
    }
    const buffers = new Set(sealed.map((s) => s.buffer));
    expect(buffers.size).toBeLessThan(sealed.length);
    for (const buffer of buffers) {
      const covered = new Uint8Array(buffer.byteLength);
      for (const s of sealed) if (s.buffer === buffer) covered.fill(1, s.byteOffset, s.byteOffset + s.length);
      // Outside the sealed values, only zeros; no sealing changed one made before it.
      const all = new Uint8Array(buffer);
      expect(all.every((b, i) => covered[i] === 1 || b === 0)).toBe(true);
    }
    sealed.forEach((s, i) => expect(s).toEqual(copies[i]));
  });

  it('a key name longer than any storage key (3-byte UTF-8 characters) still seals natively and opens by WebCrypto', async () => {
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    const native = await sessionOf('0123456789abcdef', dataKey, true);
    const web = await sessionOf('0123456789abcdef', dataKey, false);
    const long = 'é€'.repeat(700);
    const value = new Uint8Array([1, 2, 3]);
    const sealed = sealValue(native, long, value) as Uint8Array;
    expect(await openValue(web, long, sealed)).toEqual(value);
    // The scratch grown for it serves short names again.
    expect(await openValue(web, 'k/a.json', sealValue(native, 'k/a.json', value) as Uint8Array)).toEqual(value);
  });
});
