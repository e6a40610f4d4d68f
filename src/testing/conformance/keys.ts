import { listAll } from '../../contract/storage.js';
import { equal, equalJson, rejects, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

/** One class of invalid key, with a representative. */
export interface InvalidKeySample {
  readonly label: string;
  readonly key: unknown;
}

/**
 * Every class of key `assertKey` refuses. An adapter must refuse each one with
 * `checkpoint_key_invalid` before touching its backend.
 */
export const INVALID_KEY_SAMPLES: readonly InvalidKeySample[] = [
  { label: 'empty', key: '' },
  { label: 'absolute', key: '/etc/passwd' },
  { label: 'absolute (double slash)', key: '//server/share' },
  { label: '".." segment', key: 'a/../../b' },
  { label: '".." alone', key: '..' },
  { label: '"." segment', key: './a' },
  { label: 'empty segment', key: 'a//b' },
  { label: 'trailing slash', key: 'a/' },
  { label: 'backslash', key: 'a\\b' },
  { label: 'backslash traversal', key: '..\\..\\x' },
  { label: 'NUL', key: 'a\u0000b' },
  { label: 'newline', key: 'a\nb' },
  { label: 'other control character', key: 'a\u001bb' },
  { label: 'DEL', key: 'a\u007fb' },
  { label: 'drive letter', key: 'C:/x' },
  { label: 'drive-relative', key: 'c:x' },
  { label: 'longer than 1024 characters', key: 'k/'.repeat(512) + 'x' },
  { label: 'segment over 255 bytes', key: `a/${'é'.repeat(128)}` },
  // A UTF-8 file or row name turns an unpaired surrogate into U+FFFD: it would alias another key.
  { label: 'a lone high surrogate', key: 'x\ud800' },
  { label: 'a lone low surrogate', key: 'runs/\udc00/latest.json' },
  { label: 'a surrogate pair reversed', key: 'a/\ude00\ud83d' },
  { label: 'not a string (number)', key: 42 },
  { label: 'not a string (undefined)', key: undefined },
];

/**
 * Valid keys at the edges of the rules: dots that are not `.`/`..`, spaces, non-ASCII,
 * a 255-byte segment, a 1024-character key. An adapter must store each one as given.
 */
export const EDGE_KEYS: readonly string[] = [
  '.hidden',
  '...',
  'a..b/..c',
  '-',
  '~',
  'with space/and more',
  'ab:c',
  '%2e%2e/%2f',
  'ü/é',
  '\u{1f600}',
  'x\ufffd',
  `seg/${'x'.repeat(255)}`,
  `seg2/${'é'.repeat(127)}x`,
  Array.from({ length: 5 }, (_, i) => String(i).repeat(204)).join('/'),
];

/** Key validation: every invalid class refused everywhere; edge keys stored as given. */
export function keyTests(ctx: SuiteContext): void {
  ctx.group('key validation', () => {
    for (const { label, key } of INVALID_KEY_SAMPLES) {
      ctx.test(`refuses a key that is ${label} with checkpoint_key_invalid, touching nothing`, async (s) => {
        const k = key as string;
        await rejects(() => s.get(k), 'checkpoint_key_invalid', 'get');
        await rejects(() => s.put(k, utf8('x')), 'checkpoint_key_invalid', 'put');
        await rejects(() => s.put(k, utf8('x'), { ifAbsent: true }), 'checkpoint_key_invalid', 'put ifAbsent');
        await rejects(() => s.put(k, utf8('x'), { ifVersion: 'v' }), 'checkpoint_key_invalid', 'put ifVersion');
        await rejects(() => s.delete(k), 'checkpoint_key_invalid', 'delete');
        if (s.batch) {
          const batch = s.batch.bind(s);
          await rejects(
            () =>
              batch([
                { type: 'put', key: 'fine', bytes: utf8('x') },
                { type: 'put', key: k, bytes: utf8('x') },
              ]),
            'checkpoint_key_invalid',
            'batch',
          );
        }
        equalJson(await listAll(s, ''), [], 'nothing may be stored after refused calls');
      });
    }

    ctx.test('never lets a key with a lone surrogate alias the key with U+FFFD in its place', async (s) => {
      await s.put('x\ufffd', utf8('replacement character'));
      await rejects(() => s.get('x\ud800'), 'checkpoint_key_invalid', 'get of the lone-surrogate twin');
      await rejects(() => s.put('x\ud800', utf8('lone surrogate')), 'checkpoint_key_invalid', 'put of the lone-surrogate twin');
      sameBytes((await s.get('x\ufffd'))?.bytes, utf8('replacement character'), 'value of the U+FFFD key');
      equalJson(
        (await listAll(s, '')).map((e) => e.key),
        ['x\ufffd'],
        'list after the refused twin',
      );
      equal(await s.delete('x\ufffd'), true, 'delete of the U+FFFD key');
    });

    ctx.test('stores valid keys at the edges of the rules exactly as given', async (s) => {
      for (const key of EDGE_KEYS) {
        const { version } = await s.put(key, utf8(key));
        const got = await s.get(key);
        sameBytes(got?.bytes, utf8(key), `value of key ${JSON.stringify(key.slice(0, 40))}`);
        equal(got?.version, version, `version of key ${JSON.stringify(key.slice(0, 40))}`);
      }
      equalJson(
        (await listAll(s, '')).map((e) => e.key),
        [...EDGE_KEYS].sort(),
        'list of the edge keys',
      );
      for (const key of EDGE_KEYS) equal(await s.delete(key), true, `delete of ${JSON.stringify(key.slice(0, 40))}`);
      equalJson(await listAll(s, ''), [], 'list after deleting the edge keys');
    });
  });
}
