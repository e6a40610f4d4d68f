import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertKey, gunzip, gzip } from 'savepoint/toolkit';
import { isCheckpointError } from 'savepoint';
import { isGzip } from '../../src/codec/gzip.js';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';

describe('gzip', () => {
  it('round-trips any bytes and is deterministic (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
        const z = gzip(bytes);
        expect(isGzip(z)).toBe(true);
        expect(gzip(bytes)).toEqual(z);
        expect(gunzip(z)).toEqual(bytes);
      }),
    );
  });

  it('rejects every truncation with checkpoint_integrity_mismatch', () => {
    const z = gzip(utf8Encode('{"hello":"world"}'.repeat(50)));
    for (let n = 0; n < z.length; n++) {
      expect(() => gunzip(z.subarray(0, n)), `truncated to ${n}`).toThrow(/checkpoint_integrity_mismatch/);
    }
  });

  it('never returns altered data for a flipped bit: it throws or (for an unused padding bit) yields the original', () => {
    const original = utf8Encode(JSON.stringify({ text: 'checkpoint '.repeat(40), n: [1, 2, 3] }));
    const z = gzip(original);
    let caught = 0;
    for (let i = 0; i < z.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const bad = z.slice();
        bad[i] = bad[i]! ^ (1 << bit);
        try {
          expect(gunzip(bad)).toEqual(original);
        } catch (err) {
          expect(isCheckpointError(err, 'checkpoint_integrity_mismatch')).toBe(true);
          caught++;
        }
      }
    }
    expect(caught).toBeGreaterThan(z.length * 6);
  });
});

describe('utf8Encode', () => {
  it('gives exactly what TextEncoder.encode gives, for any string, lone surrogates and all (property)', () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' })), (s) => {
        expect(utf8Encode(s)).toEqual(encoder.encode(s));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('utf8Decode', () => {
  it('refuses malformed UTF-8', () => {
    expect(() => utf8Decode(new Uint8Array([0xff, 0xfe]))).toThrow(/checkpoint_schema_invalid/);
  });
});

describe('assertKey', () => {
  const bad = [
    '',
    '/abs',
    'a//b',
    'a/',
    './a',
    'a/../b',
    '..',
    'a\\b',
    'C:/x',
    'c:',
    'a\u0000b',
    'a\nb',
    'x'.repeat(1025),
    `${'y'.repeat(256)}/z`,
    'x\ud800',
    'x\udfff/y',
    '\udc00',
    'a/\ude00\ud83d',
    'runs/r\ud83d/latest.json',
  ];
  it.each(bad.map((k) => [JSON.stringify(k).slice(0, 40), k]))('rejects %s', (_label, key) => {
    expect(() => assertKey(key)).toThrow(/checkpoint_key_invalid/);
  });

  it('refuses a key exactly when it holds a lone surrogate or breaks another rule: one well-formed, one not (property)', () => {
    const lone = fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), lone, fc.nat(), (text, half, at) => {
        // eslint-disable-next-line no-control-regex
        const good = `runs/${text.replace(/[\\/:.\u0000-\u001f\u007f]/g, '_')}`;
        expect(() => assertKey(good)).not.toThrow();
        const i = 5 + (at % (good.length - 4));
        const bad = `${good.slice(0, i)}${half}${good.slice(i)}`;
        // Inserted between the halves of a pair it may pair up with one: then two lone halves remain, or a pair.
        const wellFormed = !/\p{Cs}/u.test(bad);
        if (wellFormed) expect(() => assertKey(bad)).not.toThrow();
        else expect(() => assertKey(bad)).toThrow(/checkpoint_key_invalid.*surrogate/);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps a key with U+FFFD and stores a surrogate pair (the keys a lone surrogate would alias on a UTF-8 store)', () => {
    expect(() => assertKey('x\ufffd')).not.toThrow();
    expect(() => assertKey('x/\u{1f600}.json')).not.toThrow();
  });

  it('never echoes the key in the error message', () => {
    try {
      assertKey('../secret-token-ghp_123/x');
    } catch (err) {
      expect(String((err as Error).message)).not.toContain('ghp_123');
    }
  });

  it('answers the same for a key however often it is checked: the memo of accepted keys never accepts what the rules refuse (property)', () => {
    const verdict = (k: string): string => {
      try {
        assertKey(k);
        return 'ok';
      } catch (err) {
        return String((err as Error).message);
      }
    };
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('a/b', 'a//b', '../x', 'a/./b', 'ok.json', 'C:/x', 'a\\b')), {
          minLength: 1,
          maxLength: 30,
        }),
        (keys) => {
          const first = keys.map(verdict);
          // Many distinct keys between the two passes, so the memo is also cleared and refilled.
          for (let i = 0; i < 1100; i++) verdict(`filler/${i}`);
          expect(keys.map(verdict)).toEqual(first);
          expect(keys.map(verdict)).toEqual(first);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('accepts ordinary keys', () => {
    for (const k of ['a', 'checkpoints/run-1/latest.json', 'x/.hidden', 'a/b c/ü.json', '...', 'a..b'])
      expect(() => assertKey(k)).not.toThrow();
  });

  it('no accepted key resolves outside the root, on POSIX or Windows rules (property)', () => {
    const segment = fc.oneof(fc.constantFrom('..', '.', '', 'a', '..a', 'C:', '%2e%2e', '~'), fc.string({ maxLength: 8 }));
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.boolean(), (segments, lead) => {
        const key = (lead ? '/' : '') + segments.join('/');
        let ok = true;
        try {
          assertKey(key);
        } catch {
          ok = false;
        }
        if (!ok) return;
        for (const impl of [path.posix, path.win32]) {
          const root = impl === path.posix ? '/root/store' : 'C:\\root\\store';
          const resolved = impl.resolve(root, key);
          const rel = impl.relative(root, resolved);
          const escapes = rel === '..' || rel.startsWith(`..${impl.sep}`) || impl.isAbsolute(rel) || rel === '';
          expect(escapes).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('gunzip on hostile input', () => {
  it('never allocates from a lying length field: a truncated archive claiming 4 GB fails fast', () => {
    const z = gzip(utf8Encode('x'.repeat(10_000)));
    const bad = z.slice(0, z.length - 4);
    bad.set([0xff, 0xff, 0xff, 0xfe], bad.length - 4); // ISIZE = ~4 GB
    const before = process.memoryUsage().arrayBuffers;
    const started = performance.now();
    expect(() => gunzip(bad)).toThrow(/checkpoint_integrity_mismatch/);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('reads archives with optional header fields (FNAME, FEXTRA, FCOMMENT, FHCRC), as gzip(1) writes them', async () => {
    const { gzipSync } = await import('node:zlib');
    const data = utf8Encode('{"a":1}');
    const plain = new Uint8Array(gzipSync(data));
    // Rebuild the header with every optional field set.
    const body = plain.subarray(10);
    const extra = [4, 0, 0x41, 0x42, 2, 0];
    const name = [...utf8Encode('latest.json'), 0];
    const comment = [...utf8Encode('hi'), 0];
    const header = [0x1f, 0x8b, 8, 0x04 | 0x08 | 0x10 | 0x02, 0, 0, 0, 0, 0, 3, ...extra, ...name, ...comment];
    const withHcrc = [...header, 0, 0];
    expect(gunzip(new Uint8Array([...withHcrc, ...body]))).toEqual(data);
    expect(gunzip(plain)).toEqual(data);
  });
});
