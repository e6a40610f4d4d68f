/**
 * Several callers' batches as one plain statement (the set group): each batch a lone put or a
 * pair (see batch.ts, `isPair`), no key named twice in the group. Where the batches function runs
 * each caller's batch in a PL/pgSQL block of its own (a subtransaction, arrays sent as text), this
 * statement writes every batch's rows set-wise, in one pass per kind of write, and still applies
 * or refuses each batch on its own: a batch's second put and deletes are conditioned on its first
 * put having written.
 *
 * Parameters: {@link PUT_COLUMNS} per put row, then {@link DELETE_COLUMNS} per delete row. A put
 * row is the batch's 1-based place in the group, the put's place in its batch (1 or 2), its
 * condition ({@link CONDITION}), the key's order bytes and text, the value, the `ifVersion`, the
 * metadata (`jsonb` text) and whether it is given. A delete row is the batch's place, the
 * operation's 1-based place in its batch, and the key's order bytes. Rows beyond those given are
 * all nulls: the statement is written for a count of rows rounded up to a power of two (see
 * {@link groupRows}), so that a connection keeps a few named statements, not one per count.
 *
 * Answer: a row per put that wrote (`group`, `op`, `version`) and per key deleted (`group`, `op`,
 * `existed` true). A batch whose first put has no row was refused by that put's condition.
 */

/** A put row's condition: none, `ifAbsent`, `ifVersion`. */
export const CONDITION = { any: 0, ifAbsent: 1, ifVersion: 2 } as const;

/** Parameters of one put row, and of one delete row. */
export const PUT_COLUMNS = 9;
export const DELETE_COLUMNS = 3;

/** Most put rows, and delete rows, one set group takes. */
export const MAX_GROUP_PUTS = 64;
export const MAX_GROUP_DELETES = 64;

/** The rows a statement is written for: `count` rounded up to a power of two (0 stays 0 for deletes). */
export function groupRows(count: number): number {
  if (count === 0) return 0;
  let rows = 2;
  while (rows < count) rows *= 2;
  return rows;
}

function putRows(rows: number): string {
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    const p = r * PUT_COLUMNS;
    out.push(
      `($${p + 1}::int, $${p + 2}::int, $${p + 3}::int, $${p + 4}::bytea, $${p + 5}::text, $${p + 6}::bytea, $${p + 7}::bigint, $${p + 8}::jsonb, $${p + 9}::boolean)`,
    );
  }
  return out.join(',\n    ');
}

function deleteRows(rows: number, from: number): string {
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    const p = from + r * DELETE_COLUMNS;
    out.push(`($${p + 1}::int, $${p + 2}::int, $${p + 3}::bytea)`);
  }
  return out.join(', ');
}

/**
 * The set group's statement for table `t` (its version sequence drawn by `next`), written for
 * `puts` put rows and `deletes` delete rows (each a {@link groupRows} count).
 */
export function groupSql(t: string, next: string, puts: number, deletes: number): string {
  // The version is drawn once a row, in a materialized step, so that both columns get the same one.
  const insert = (where: string): string => `INSERT INTO ${t} AS s (key_order, key, version, value, metadata, metadata_version)
  SELECT r.k, r.x, r.v, r.val, r.meta, CASE WHEN r.given THEN r.v END FROM r WHERE ${where}`;
  const upsert = `ON CONFLICT (key_order) DO UPDATE SET value = EXCLUDED.value, key = EXCLUDED.key, version = EXCLUDED.version, updated_at = now(),
    metadata = EXCLUDED.metadata, metadata_version = EXCLUDED.metadata_version`;
  const gone =
    deletes === 0
      ? ''
      : `, gone AS (
  DELETE FROM ${t} AS d USING (VALUES ${deleteRows(deletes, puts * PUT_COLUMNS)}) AS g(i, op, k)
  WHERE d.key_order = g.k AND g.i IN (SELECT i FROM wrote) RETURNING g.i, g.op
)`;
  return `WITH p(i, op, cond, k, x, val, ver, meta, given) AS (VALUES
    ${putRows(puts)}
), r AS MATERIALIZED (
  SELECT p.*, ${next} AS v FROM p WHERE p.k IS NOT NULL
), by_version AS (
  UPDATE ${t} AS s SET value = r.val, key = r.x, version = r.v, metadata = r.meta, metadata_version = CASE WHEN r.given THEN r.v END, updated_at = now()
  FROM r WHERE r.op = 1 AND r.cond = ${CONDITION.ifVersion} AND s.key_order = r.k AND s.version = r.ver
  RETURNING s.key_order, s.version
), if_absent AS (
  ${insert(`r.op = 1 AND r.cond = ${CONDITION.ifAbsent}`)}
  ON CONFLICT (key_order) DO NOTHING RETURNING s.key_order, s.version
), any_first AS (
  ${insert(`r.op = 1 AND r.cond = ${CONDITION.any}`)}
  ${upsert} RETURNING s.key_order, s.version
), firsts AS (
  SELECT key_order, version FROM by_version UNION ALL SELECT key_order, version FROM if_absent UNION ALL SELECT key_order, version FROM any_first
), wrote AS (
  SELECT r.i FROM r JOIN firsts f ON f.key_order = r.k WHERE r.op = 1
), seconds AS (
  ${insert('r.op = 2 AND r.i IN (SELECT i FROM wrote)')}
  ${upsert} RETURNING s.key_order, s.version
)${gone}
SELECT r.i AS "group", r.op, w.version::text AS version, NULL::boolean AS existed
FROM r JOIN (SELECT key_order, version FROM firsts UNION ALL SELECT key_order, version FROM seconds) AS w ON w.key_order = r.k${
    deletes === 0 ? '' : '\nUNION ALL SELECT g.i, g.op, NULL, true FROM gone AS g'
  }`;
}
