import { describe, expect, it } from 'vitest';
import { DELETES_AS_PARAMETERS, storeSql, type PutSql } from '../../../src/storage/postgres/sql.js';

// The statements postgresStorage builds, checked without a server: which take the metadata, and
// what each put answers (a lone put its version as text, a pair's first put as a bigint for the
// statement's own SELECT).

const sql = storeSql('sch', 'tab');

const lonePuts = (puts: PutSql): string[] => [puts.putAny, puts.putIfAbsent, puts.putIfVersion];
const pairs = (puts: PutSql): string[] => {
  const { withDeletes, checked, ...plain } = puts.pair;
  return [
    ...Object.values(plain),
    ...Object.values(checked),
    ...[1, 2, DELETES_AS_PARAMETERS, DELETES_AS_PARAMETERS + 1].flatMap((n) => Object.values(withDeletes(n))),
  ];
};

describe('postgresStorage statements', () => {
  it('say once whether they take each value metadata', () => {
    expect(sql.puts.sendsMetadata).toBe(true);
    expect(sql.putsComputed.sendsMetadata).toBe(false);
    for (const text of [...lonePuts(sql.puts), ...pairs(sql.puts)]) expect(text).toContain('metadata_version');
    for (const text of [...lonePuts(sql.putsComputed), ...pairs(sql.putsComputed)]) expect(text).not.toContain('metadata');
  });

  it('answer a lone put with its version as text, and a pair first put as a bigint', () => {
    for (const puts of [sql.puts, sql.putsComputed]) {
      for (const text of lonePuts(puts)) expect(text.trimEnd()).toMatch(/ RETURNING s\.version::text AS version$/);
      for (const text of pairs(puts)) {
        // A checked pair's check comes first (`WITH chk AS (…), first AS (…)`).
        const first = /(?:WITH |\), )first AS \(([\s\S]*?)\n\), second AS/.exec(text)?.[1];
        expect(first).toBeDefined();
        expect(first!.trimEnd()).toMatch(/ RETURNING s\.version$/);
        expect(text).not.toContain('::text AS version');
      }
    }
  });
});
