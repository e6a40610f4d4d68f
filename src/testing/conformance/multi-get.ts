import { getManyOf, readMany, type MultiGetStorage } from '../../contract/storage.js';
import { equal, ok, rejects, sameBytes, utf8 } from './check.js';
import { EDGE_KEYS, INVALID_KEY_SAMPLES } from './keys.js';
import type { SuiteContext } from './context.js';

/** The optional multi-get (`getMany`, contract/storage.ts), checked on stores that declare it; `readMany` on every store. */
export function multiGetTests(ctx: SuiteContext): void {
  ctx.group('multi-get', () => {
    ctx.test('multi-get: getMany() is present when capabilities.multiGet is declared', async (adapter) => {
      if (adapter.capabilities.multiGet === true)
        ok(typeof (adapter as Partial<MultiGetStorage>).getMany === 'function', 'capabilities.multiGet without getMany()');
      else equal(getManyOf(adapter), undefined, 'a store that does not declare multiGet offers none');
    });

    ctx.test(
      'multi-get: each key answered in the order asked, as get answers it; absent keys undefined, a key asked twice twice',
      async (adapter) => {
        const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 11) & 0xff);
        await adapter.put('mg/a', utf8('one'));
        await adapter.put('mg/b', bytes);
        await adapter.put('mg/b', utf8('two'));
        await adapter.put('mg/c', new Uint8Array(0));
        await adapter.put('mg/d', bytes);
        const keys = ['mg/d', 'mg/absent', 'mg/a', 'mg/c', 'mg/b', 'mg/a'];
        const singly = await Promise.all(keys.map((key) => adapter.get(key)));
        for (const [name, answers] of [
          ['readMany', await readMany(adapter, keys)],
          ['getMany', await getManyOf(adapter)?.(keys)],
        ] as const) {
          if (!answers) continue;
          equal(answers.length, keys.length, `${name}: one answer per key`);
          keys.forEach((key, i) => {
            const one = singly[i];
            if (!one) return equal(answers[i], undefined, `${name}: absent key ${key}`);
            sameBytes(answers[i]?.bytes, one.bytes, `${name}: the bytes of ${key}`);
            equal(answers[i]?.version, one.version, `${name}: the version of ${key}`);
          });
        }
      },
    );

    ctx.test('multi-get: no keys, no answers; edge keys read back; the bytes are the caller’s copy', async (adapter) => {
      const getMany = getManyOf(adapter);
      if (!getMany) return;
      equal((await getMany([])).length, 0, 'getMany of no keys');
      for (const key of EDGE_KEYS) await adapter.put(key, utf8(`value of ${key}`));
      const answers = await getMany(EDGE_KEYS);
      EDGE_KEYS.forEach((key, i) => sameBytes(answers[i]?.bytes, utf8(`value of ${key}`), `getMany of edge key ${JSON.stringify(key)}`));
      answers[0]!.bytes.fill(0);
      sameBytes(
        (await adapter.get(EDGE_KEYS[0]!))?.bytes,
        utf8(`value of ${EDGE_KEYS[0]!}`),
        'the stored value after the answer was changed',
      );
    });

    ctx.test('multi-get: many keys at once', async (adapter) => {
      const getMany = getManyOf(adapter);
      if (!getMany) return;
      const keys = Array.from({ length: 150 }, (_, i) => `mg/many/${String(i).padStart(3, '0')}`);
      for (const key of keys.filter((_, i) => i % 3 !== 0)) await adapter.put(key, utf8(key));
      const answers = await getMany(keys);
      keys.forEach((key, i) => {
        if (i % 3 === 0) equal(answers[i], undefined, `absent key ${key}`);
        else sameBytes(answers[i]?.bytes, utf8(key), `the value of ${key}`);
      });
    });

    ctx.test('multi-get: an invalid key rejects the call with checkpoint_key_invalid', async (adapter) => {
      const getMany = getManyOf(adapter);
      if (!getMany) return;
      await adapter.put('mg/ok', utf8('x'));
      for (const { label, key } of INVALID_KEY_SAMPLES)
        await rejects(() => getMany(['mg/ok', key as string]), 'checkpoint_key_invalid', `getMany with ${label}`);
    });
  });
}
