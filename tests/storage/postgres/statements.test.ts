import { describe, expect, it } from 'vitest';
import { DELETES_AS_PARAMETERS, storeSql, type PutSql } from '../../../src/storage/postgres/sql.js';

// The statements postgresStorage builds, checked without a server: which take the metadata, and
// what each put answers (a lone put its version as text, a pair's first put as a bigint for the
// statement's own SELECT).

const sql = storeSql('sch', 'tab');

const lonePuts = (puts: PutSql): string[] => [puts.putAny, puts.putIfAbsent, puts.putIfVersion];
/** A pair's statements by its first put's condition, with and without deletes. */
const plainPairs = (puts: PutSql): string[] => {
  const { withDeletes, checked: _, ...plain } = puts.pair;
  return [
    ...Object.values(plain),
    ...[1, 2, DELETES_AS_PARAMETERS, DELETES_AS_PARAMETERS + 1].flatMap((n) => Object.values(withDeletes(n))),
  ];
};
const pairs = (puts: PutSql): string[] => [...plainPairs(puts), ...Object.values(puts.pair.checked)];

describe('postgresStorage statements', () => {
  it('say once whether they take each value metadata', () => {
    expect(sql.puts.sendsMetadata).toBe(true);
    expect(sql.putsWithoutConflictFunction.sendsMetadata).toBe(true);
    expect(sql.putsComputed.sendsMetadata).toBe(false);
    for (const puts of [sql.puts, sql.putsWithoutConflictFunction])
      for (const text of [...lonePuts(puts), ...pairs(puts)]) expect(text).toContain('metadata_version');
    for (const text of [...lonePuts(sql.putsComputed), ...pairs(sql.putsComputed)]) expect(text).not.toContain('metadata');
  });

  it('answer a lone put with its version as text, and a WITH-form pair first put as a bigint', () => {
    for (const puts of [sql.puts, sql.putsWithoutConflictFunction, sql.putsComputed])
      for (const text of lonePuts(puts)) expect(text.trimEnd()).toMatch(/ RETURNING s\.version::text AS version$/);
    const withForms = [...pairs(sql.putsWithoutConflictFunction), ...pairs(sql.putsComputed), ...Object.values(sql.puts.pair.checked)];
    for (const text of withForms) {
      // A checked pair's check comes first (`WITH chk AS (…), first AS (…)`).
      const first = /(?:WITH |\), )first AS \(([\s\S]*?)\n\), second AS/.exec(text)?.[1];
      expect(first).toBeDefined();
      expect(first!.trimEnd()).toMatch(/ RETURNING s\.version$/);
      expect(text).not.toContain('::text AS version');
    }
  });

  it('send a pair as one insert that calls the conflict function only where the table has it', () => {
    expect(sql.puts.pairRaises).toBe(true);
    expect(sql.putsWithoutConflictFunction.pairRaises).toBe(false);
    expect(sql.putsComputed.pairRaises).toBe(false);
    for (const text of plainPairs(sql.puts)) {
      expect(text).toMatch(/^(WITH gone AS \([\s\S]*?\)\n)?INSERT INTO /);
      expect(text).toContain(' AS first, s.version::text AS version');
    }
    const { any, ifAbsent, ifVersion } = sql.puts.pair;
    expect(any).not.toContain('"tab_conflict"');
    for (const text of [ifAbsent, ifVersion]) expect(text).toContain('"sch"."tab_conflict"(1)');
    for (const puts of [sql.putsWithoutConflictFunction, sql.putsComputed])
      for (const text of pairs(puts)) expect(text).not.toContain('_conflict');
    expect(sql.migrate.some((s) => s.includes('FUNCTION "sch"."tab_conflict"(op integer)'))).toBe(true);
    expect(sql.drop).toContain('DROP FUNCTION IF EXISTS "sch"."tab_conflict"(integer)');
  });
});
