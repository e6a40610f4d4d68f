import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from '../../../src/contract/storage.js';
import { DELETE_COLUMNS, groupRows, MAX_GROUP_DELETES, PUT_COLUMNS } from '../../../src/storage/postgres/group-sql.js';
import { setGroupAnswer, setGroupLength, setGroupParams } from '../../../src/storage/postgres/set-group.js';
import { storeSql } from '../../../src/storage/postgres/sql.js';
import type { PlannedBatch } from '../../../src/storage/postgres/store-state.js';

// The set group's planning, without a server: which waiting batches one statement takes, the
// parameters it is sent, and its answer read back as the batches function's rows.

const bytes = new Uint8Array([1]);
const plan = (operations: BatchOperation[]): PlannedBatch => ({
  operations,
  versions: operations.map((op) => (op.ifVersion === undefined ? null : String(op.ifVersion))),
  values: operations.map((op) => (op.type === 'put' ? Buffer.from(op.bytes) : null)),
});
const put = (key: string, options: Partial<BatchOperation> = {}): BatchOperation =>
  ({ type: 'put', key, bytes, ...options }) as BatchOperation;
const del = (key: string): BatchOperation => ({ type: 'delete', key });
const pair = (head: string, doc: string, ...deletes: string[]): PlannedBatch =>
  plan([put(head, { ifVersion: '7' }), put(doc), ...deletes.map(del)]);
const lone = (key: string, options: Partial<BatchOperation> = {}): PlannedBatch => plan([put(key, options)]);
const noMetadata = (): [string | null, boolean] => [null, false];

describe('postgresStorage set group planning', () => {
  it('takes lone puts and pairs from the front, and stops at the first other batch', () => {
    const queue = [lone('a'), pair('h1', 'd1', 'old1'), lone('b', { ifAbsent: true }), plan([del('x')]), lone('c')];
    expect(setGroupLength(queue, 32)).toBe(3);
    // A pair whose second put is conditional, a check: the batches function's.
    expect(setGroupLength([plan([put('h'), put('d', { ifAbsent: true })]), lone('a')], 32)).toBe(0);
    expect(setGroupLength([lone('a'), plan([put('h'), { type: 'check', key: 'l', ifVersion: '1' }])], 32)).toBe(0);
  });

  it('never takes a key twice, never more than the statement rows, never fewer than two batches', () => {
    expect(setGroupLength([lone('a'), pair('h', 'd', 'a'), lone('b')], 32)).toBe(0);
    expect(setGroupLength([lone('a'), lone('b'), pair('h', 'b')], 32)).toBe(2);
    expect(setGroupLength([lone('a'), lone('b'), lone('c')], 2)).toBe(2);
    const wide = pair('h', 'd', ...Array.from({ length: MAX_GROUP_DELETES + 1 }, (_, i) => `old/${i}`));
    expect(setGroupLength([lone('a'), wide, lone('b')], 32)).toBe(0);
    expect(setGroupLength([wide, lone('a')], 32)).toBe(0);
    expect(setGroupLength([lone('a')], 32)).toBe(0);
    expect(
      setGroupLength(
        Array.from({ length: 40 }, (_, i) => pair(`h/${i}`, `d/${i}`)),
        32,
      ),
    ).toBe(32);
  });

  it('property: parameters are the given rows, then nulls up to a power of two, puts before deletes', () => {
    const batches = fc.array(
      fc.oneof(
        fc.nat(3).map((n) => ({ deletes: n, pair: true })),
        fc.constant({ deletes: 0, pair: false }),
      ),
      { minLength: 2, maxLength: 32 },
    );
    fc.assert(
      fc.property(batches, (shapes) => {
        const group = shapes.map((s, g) =>
          s.pair ? pair(`h/${g}`, `d/${g}`, ...Array.from({ length: s.deletes }, (_, j) => `o/${g}/${j}`)) : lone(`l/${g}`),
        );
        const { params, puts, deletes } = setGroupParams(group, noMetadata);
        const putsGiven = shapes.reduce((n, s) => n + (s.pair ? 2 : 1), 0);
        const deletesGiven = shapes.reduce((n, s) => n + s.deletes, 0);
        expect(puts).toBe(groupRows(putsGiven));
        expect(deletes).toBe(groupRows(deletesGiven));
        expect(params.length).toBe(puts * PUT_COLUMNS + deletes * DELETE_COLUMNS);
        const putParams = params.slice(0, puts * PUT_COLUMNS);
        expect(putParams.slice(putsGiven * PUT_COLUMNS).every((v) => v === null)).toBe(true);
        expect(params.slice(puts * PUT_COLUMNS + deletesGiven * DELETE_COLUMNS).every((v) => v === null)).toBe(true);
        // Each put row starts with its batch's place, its own place in the batch and its condition.
        const firstRows = Array.from({ length: putsGiven }, (_, r) => putParams.slice(r * PUT_COLUMNS, r * PUT_COLUMNS + 3));
        expect(firstRows.filter(([, op]) => op === 1).map(([g]) => g)).toEqual(group.map((_, g) => g + 1));
        expect(firstRows.filter(([, op]) => op === 1).map(([, , cond]) => cond)).toEqual(shapes.map((s) => (s.pair ? 2 : 0)));
      }),
    );
  });

  it('rounds row counts up to a power of two, so that a connection keeps few statements', () => {
    expect([0, 1, 2, 3, 4, 5, 9, 33, 64].map(groupRows)).toEqual([0, 2, 2, 4, 4, 8, 16, 64, 64]);
    const statement = storeSql('sch', 'tab').puts.group!;
    expect(statement(4, 0)).toBe(statement(4, 0));
    expect(statement(4, 0)).not.toContain('DELETE');
    expect(statement(4, 2)).toContain('DELETE');
    expect(storeSql('sch', 'tab').putsComputed.group).toBeUndefined();
  });

  it('reads the answer back: a batch whose first put wrote nothing failed there, deletes say whether the key was there', () => {
    const group = [pair('h1', 'd1', 'o1', 'o2'), lone('a', { ifAbsent: true }), pair('h2', 'd2', 'o3')];
    const rows = setGroupAnswer(group, [
      { group: 1, op: 1, version: '10', existed: null },
      { group: 1, op: 2, version: '11', existed: null },
      { group: 1, op: 4, version: null, existed: true },
      { group: 3, op: 1, version: '12', existed: null },
      { group: 3, op: 2, version: '13', existed: null },
    ]);
    expect(rows).toEqual([
      { group: 1, op: 1, version: '10', existed: null, failed: null },
      { group: 1, op: 2, version: '11', existed: null, failed: null },
      { group: 1, op: 3, version: null, existed: false, failed: null },
      { group: 1, op: 4, version: null, existed: true, failed: null },
      { group: 2, op: null, version: null, existed: null, failed: 1 },
      { group: 3, op: 1, version: '12', existed: null, failed: null },
      { group: 3, op: 2, version: '13', existed: null, failed: null },
      { group: 3, op: 3, version: null, existed: false, failed: null },
    ]);
  });
});
