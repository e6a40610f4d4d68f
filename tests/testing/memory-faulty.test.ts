import { describe, expect, it } from 'vitest';
import { listAll, memoryStorage } from 'savepoint';
import { utf8Encode } from '../../src/codec/utf8.js';
import { faultyStorage } from 'savepoint/testing';

const b = (s: string): Uint8Array => utf8Encode(s);

describe('memoryStorage', () => {
  it('copies bytes in and out', async () => {
    const s = memoryStorage();
    const input = b('abc');
    await s.put('k', input);
    input[0] = 0;
    const out = await s.get('k');
    out!.bytes[1] = 0;
    expect((await s.get('k'))!.bytes).toEqual(b('abc'));
  });

  it('rejects oversize values when limited', async () => {
    const s = memoryStorage({ maxValueBytes: 2 });
    await expect(s.put('k', b('abc'))).rejects.toMatchObject({ reasonCode: 'checkpoint_too_large' });
  });

  it('applies a batch all or nothing', async () => {
    const s = memoryStorage();
    await s.put('a', b('1'));
    await expect(
      s.batch!([
        { type: 'put', key: 'b', bytes: b('2') },
        { type: 'put', key: 'a', bytes: b('3'), ifAbsent: true },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(await s.get('b')).toBeUndefined();
    expect((await listAll(s, '')).map((e) => e.key)).toEqual(['a']);
  });
});

describe('faultyStorage', () => {
  it('fails the N-th operation without touching the inner store', async () => {
    const inner = memoryStorage();
    const s = faultyStorage(inner, { at: 1 });
    await s.put('a', b('1'));
    await expect(s.put('b', b('2'))).rejects.toMatchObject({ reasonCode: 'checkpoint_storage_unavailable' });
    await s.put('c', b('3'));
    expect((await listAll(inner, '')).map((e) => e.key)).toEqual(['a', 'c']);
    expect(s.log.map((r) => r.outcome)).toEqual(['ok', 'fail', 'ok']);
  });

  it('fail-after lands the write but reports failure', async () => {
    const inner = memoryStorage();
    const s = faultyStorage(inner, { at: 0, action: 'fail-after' });
    await expect(s.put('a', b('1'))).rejects.toThrow(/injected fail-after/);
    expect(await inner.get('a')).toBeDefined();
  });

  it('crash kills every later call; crash-after lands first', async () => {
    for (const action of ['crash', 'crash-after'] as const) {
      const inner = memoryStorage();
      const s = faultyStorage(inner, { at: 1, action, count: 'writes' });
      await s.put('a', b('1'));
      await s.get('a'); // reads are not counted with count: 'writes'
      await expect(s.put('b', b('2'))).rejects.toThrow();
      expect(s.crashed).toBe(true);
      await expect(s.get('a')).rejects.toThrow(/crashed/);
      expect((await inner.get('b')) !== undefined).toBe(action === 'crash-after');
    }
  });

  it('counts a whole listing as one operation', async () => {
    const inner = memoryStorage();
    await inner.put('x/1', b('1'));
    await inner.put('x/2', b('2'));
    const s = faultyStorage(inner, { at: (op) => (op.operation === 'list' ? 'fail' : undefined) });
    await expect(listAll(s, 'x/')).rejects.toThrow(/injected fail at list/);
  });
});
