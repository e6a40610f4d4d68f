import { describe, expect, it } from 'vitest';
import {
  aesGcmOpen,
  aesGcmSeal,
  hkdfSha256,
  hmacSha256,
  importAesKey,
  importHmacKey,
  pbkdf2Sha256,
} from '../../../src/storage/encrypted/primitives.js';

// Known-answer tests: the primitives give the published results, so the platform's WebCrypto
// and the way they are called (key sizes, tag length, associated data) are what they claim.
const hex = (text: string): Uint8Array => Uint8Array.from(text.match(/../g) ?? [], (b) => Number.parseInt(b, 16));
const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('AES-256-GCM (McGrew & Viega, "The Galois/Counter Mode of Operation", test case 16)', () => {
  const key = hex('feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308');
  const iv = hex('cafebabefacedbaddecaf888');
  const aad = hex('feedfacedeadbeeffeedfacedeadbeefabaddad2');
  const plaintext = hex(
    'd9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39',
  );
  const ciphertext =
    '522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662';
  const tag = '76fc6ece0f4e1768cddf8853bb2d551b';

  it('encrypts to the published ciphertext and tag, and decrypts back', async () => {
    const k = await importAesKey(key);
    const sealed = await aesGcmSeal(k, iv, aad, plaintext);
    expect(toHex(sealed)).toBe(ciphertext + tag);
    expect(toHex((await aesGcmOpen(k, iv, aad, sealed))!)).toBe(toHex(plaintext));
  });

  it('refuses a changed tag, ciphertext or associated data', async () => {
    const k = await importAesKey(key);
    const sealed = hex(ciphertext + tag);
    const flipped = sealed.slice();
    flipped[sealed.length - 1]! ^= 1;
    expect(await aesGcmOpen(k, iv, aad, flipped)).toBeUndefined();
    const changed = sealed.slice();
    changed[0]! ^= 0x80;
    expect(await aesGcmOpen(k, iv, aad, changed)).toBeUndefined();
    expect(await aesGcmOpen(k, iv, aad.subarray(1), sealed)).toBeUndefined();
  });
});

describe('HMAC-SHA-256 (RFC 4231)', () => {
  it('test case 1', async () => {
    const mac = await hmacSha256(await importHmacKey(new Uint8Array(20).fill(0x0b)), text('Hi There'));
    expect(toHex(mac)).toBe('b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7');
  });
  it('test case 2', async () => {
    const mac = await hmacSha256(await importHmacKey(text('Jefe')), text('what do ya want for nothing?'));
    expect(toHex(mac)).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });
});

describe('HKDF-SHA-256 (RFC 5869, test case 1)', () => {
  it('derives the published output', async () => {
    const okm = await hkdfSha256(new Uint8Array(22).fill(0x0b), hex('000102030405060708090a0b0c'), hex('f0f1f2f3f4f5f6f7f8f9'), 42);
    expect(toHex(okm)).toBe('3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865');
  });
});

describe('PBKDF2-HMAC-SHA-256 (RFC 7914, section 11)', () => {
  it('P="passwd", S="salt", c=1', async () => {
    const dk = await pbkdf2Sha256(text('passwd'), text('salt'), 1, 64);
    expect(toHex(dk)).toBe(
      '55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783',
    );
  });
  it('P="Password", S="NaCl", c=80000', async () => {
    const dk = await pbkdf2Sha256(text('Password'), text('NaCl'), 80000, 64);
    expect(toHex(dk)).toBe(
      '4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d',
    );
  });
});
