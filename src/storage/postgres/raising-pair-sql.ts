/**
 * A pair (batch-shape.ts, `isPair`) as one INSERT of its two rows, for a table whose statements
 * write the metadata column and that has the conflict function (sql.ts, `conflictFunctionSql`).
 * The first put's condition is checked where its row meets the key: in the `ON CONFLICT` clause
 * for a key that is there, in the `RETURNING` clause for one the insert created where `ifVersion`
 * needed it to be there. A condition that fails calls the conflict function, which raises
 * `CONFLICT_SQLSTATE` with the message `1` (the batch's first operation, as the batch function
 * names it): the whole statement is rolled back, its deletes included, and nothing is written.
 *
 * Where the pair's `WITH` form (sql.ts, `pairStatements`) runs the first put, then the second
 * and the deletes only if the first wrote, each a node of the plan and the answer read through
 * subplans, this is one insert of two rows: about a tenth less of the server's CPU a statement
 * (bench/LOG.md). The `WITH` form stays for tables without the function (an earlier release made
 * them and the store may not migrate) and for those whose metadata the server computes.
 *
 * Parameters as the `WITH` form's with the metadata: the first key's order bytes, text and value
 * ($1-$3), the second's ($4-$6), each value's metadata and flag ($7-$10), the first's `ifVersion`
 * ($11), then the deleted keys (`deletes`, an SQL row source of `(key_order, at)`). Answer: a row
 * a put, `first` (whether it is the first put's row), its new `version` as text, and with
 * deletes `gone`, the 1-based places of the deleted keys that existed.
 */

/** The condition of a pair's first put. */
export type FirstCondition = 'any' | 'ifAbsent' | 'ifVersion';

/** The `ifVersion` parameter. */
const VERSION = 11;

/**
 * A timestamp no committed row holds: `ifVersion`'s first row is inserted with it, so that the
 * `RETURNING` clause can tell a row the insert created (the key was gone) from one it updated.
 */
const NEVER = "'-infinity'::timestamptz";

/**
 * The pair's statement on table `t` (versions drawn by `next`; `conflict` the conflict
 * function's quoted name), by the first put's condition, with `deletes` when given.
 */
export function raisingPairSql(t: string, next: string, conflict: string, condition: FirstCondition, deletes?: string): string {
  const failed = `${conflict}(1)`;
  const firstAt = condition === 'ifVersion' ? NEVER : 'now()';
  // CASE, not OR: only CASE fixes the order in which PostgreSQL evaluates, so the function is called only when the condition fails.
  const holds =
    condition === 'any'
      ? ''
      : `\n  WHERE CASE WHEN s.key_order <> $1::bytea${condition === 'ifVersion' ? ` OR s.version = $${VERSION}::bigint` : ''} THEN true ELSE ${failed} END`;
  const first =
    condition === 'ifVersion'
      ? `CASE WHEN s.updated_at = ${NEVER} THEN ${failed} ELSE s.key_order = $1::bytea END`
      : 's.key_order = $1::bytea';
  const gone =
    deletes === undefined
      ? ''
      : `WITH gone AS (
  DELETE FROM ${t} AS d USING ${deletes} AS k(key_order, at) WHERE d.key_order = k.key_order RETURNING k.at
)
`;
  // The version is drawn in a subquery kept apart (OFFSET 0), once a row, so that both columns get the same one.
  return `${gone}INSERT INTO ${t} AS s (key_order, key, version, value, metadata, metadata_version, updated_at)
SELECT r.k, r.x, r.v, r.val, r.meta, CASE WHEN r.given THEN r.v END, r.at
FROM (SELECT q.*, ${next} AS v FROM (VALUES ($1::bytea, $2::text, $3::bytea, $7::jsonb, $8::boolean, ${firstAt}),
  ($4::bytea, $5::text, $6::bytea, $9::jsonb, $10::boolean, now())) AS q(k, x, val, meta, given, at) OFFSET 0) AS r
ON CONFLICT (key_order) DO UPDATE SET value = EXCLUDED.value, key = EXCLUDED.key, version = EXCLUDED.version, updated_at = now(),
  metadata = EXCLUDED.metadata, metadata_version = EXCLUDED.metadata_version${holds}
RETURNING ${first} AS first, s.version::text AS version${deletes === undefined ? '' : ', ARRAY(SELECT at::int FROM gone) AS gone'}`;
}
