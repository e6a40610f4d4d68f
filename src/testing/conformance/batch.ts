import type { BatchOperation, BatchOutcome, StorageAdapter } from '../../contract/storage.js';
import { listAll } from '../../contract/storage.js';
import { equal, equalJson, fail, ok, rejects, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

function batchOf(s: StorageAdapter): (ops: readonly BatchOperation[]) => Promise<BatchOutcome[]> {
  if (!s.batch) fail('capabilities.atomicBatch is true but batch() is missing');
  return s.batch.bind(s);
}

async function snapshot(s: StorageAdapter): Promise<string> {
  const entries = await listAll(s, '');
  const values = await Promise.all(entries.map(async (e) => [e.key, e.version, Array.from((await s.get(e.key))?.bytes ?? [])]));
  return JSON.stringify(values);
}

/** Atomic batches, for adapters that declare `atomicBatch`. */
export function batchTests(ctx: SuiteContext): void {
  ctx.group('atomic batch (when capabilities.atomicBatch)', () => {
    batchOutcomeTests(ctx);
    batchConditionTests(ctx);
  });
}

/** A batch applies its puts and deletes and reports their outcomes in order. */
function batchOutcomeTests(ctx: SuiteContext): void {
  ctx.test('applies puts and deletes and reports outcomes in order', async (s) => {
    if (!s.capabilities.atomicBatch) return; // no batch() to test; its absence is checked in basics
    const batch = batchOf(s);
    const old = await s.put('b/old', utf8('old'));
    await s.put('b/gone', utf8('gone'));
    const outcomes = await batch([
      { type: 'put', key: 'b/new', bytes: utf8('new'), ifAbsent: true },
      { type: 'put', key: 'b/old', bytes: utf8('old2'), ifVersion: old.version },
      { type: 'delete', key: 'b/gone' },
      { type: 'delete', key: 'b/never' },
    ]);
    equalJson(
      outcomes.map((o) => [o.type, o.key]),
      [
        ['put', 'b/new'],
        ['put', 'b/old'],
        ['delete', 'b/gone'],
        ['delete', 'b/never'],
      ],
      'outcomes, in the order given',
    );
    const [pNew, pOld, dGone, dNever] = outcomes;
    equal(pNew?.type === 'put' ? pNew.version : undefined, (await s.get('b/new'))?.version, 'version of b/new');
    equal(pOld?.type === 'put' ? pOld.version : undefined, (await s.get('b/old'))?.version, 'version of b/old');
    ok(pOld?.type === 'put' && pOld.version !== old.version, 'a batch put must change the version');
    equal(dGone?.type === 'delete' ? dGone.existed : undefined, true, 'existed flag of a deleted key');
    equal(dNever?.type === 'delete' ? dNever.existed : undefined, false, 'existed flag of a missing key');
    sameBytes((await s.get('b/old'))?.bytes, utf8('old2'), 'b/old after the batch');
    equal(await s.get('b/gone'), undefined, 'b/gone after the batch');
  });
}

/** A failed condition or check operation refuses the whole batch. */
function batchConditionTests(ctx: SuiteContext): void {
  ctx.test('a batch whose condition fails applies nothing and rejects with checkpoint_conflict', async (s) => {
    if (!s.capabilities.atomicBatch) return;
    const batch = batchOf(s);
    const a = await s.put('b/a', utf8('a'));
    await s.put('b/a', utf8('a2'));
    await s.put('b/c', utf8('c'));
    const before = await snapshot(s);
    await rejects(
      () =>
        batch([
          { type: 'put', key: 'b/x', bytes: utf8('x') },
          { type: 'delete', key: 'b/c' },
          { type: 'put', key: 'b/a', bytes: utf8('a3'), ifVersion: a.version },
        ]),
      'checkpoint_conflict',
      'batch with a stale ifVersion last',
    );
    equal(await snapshot(s), before, 'store after a refused batch (stale ifVersion)');
    await rejects(
      () =>
        batch([
          { type: 'put', key: 'b/y', bytes: utf8('y') },
          { type: 'put', key: 'b/c', bytes: utf8('c2'), ifAbsent: true },
        ]),
      'checkpoint_conflict',
      'batch with a failing ifAbsent',
    );
    equal(await snapshot(s), before, 'store after a refused batch (ifAbsent)');
  });

  ctx.test('a check operation fences the batch on another key without writing it', async (s) => {
    if (!s.capabilities.atomicBatch) return;
    const batch = batchOf(s);
    const lease = await s.put('b/lease', utf8('holder-1'));
    const outcomes = await batch([
      { type: 'check', key: 'b/lease', ifVersion: lease.version },
      { type: 'put', key: 'b/h1', bytes: utf8('h1'), ifAbsent: true },
      { type: 'check', key: 'b/unborn', ifAbsent: true },
    ]);
    equalJson(
      outcomes.map((o) => [o.type, o.key]),
      [
        ['check', 'b/lease'],
        ['put', 'b/h1'],
        ['check', 'b/unborn'],
      ],
      'outcomes of a fenced batch',
    );
    equal((await s.get('b/lease'))?.version, lease.version, 'a check must not change the checked key');
    equal(await s.get('b/unborn'), undefined, 'a check must not create the checked key');
    await s.put('b/lease', utf8('holder-2'));
    const before = await snapshot(s);
    await rejects(
      () =>
        batch([
          { type: 'check', key: 'b/lease', ifVersion: lease.version },
          { type: 'put', key: 'b/h2', bytes: utf8('h2'), ifAbsent: true },
        ]),
      'checkpoint_conflict',
      'batch fenced by a lease another writer renewed',
    );
    await rejects(
      () =>
        batch([
          { type: 'put', key: 'b/h3', bytes: utf8('h3') },
          { type: 'check', key: 'b/h1', ifAbsent: true },
        ]),
      'checkpoint_conflict',
      'batch fenced by ifAbsent on an existing key',
    );
    equal(await snapshot(s), before, 'store after refused fenced batches');
  });
}
