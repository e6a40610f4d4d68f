import { CheckpointError } from '../../contract/errors.js';
import { groupSql } from './group-sql.js';
import { linkedReadSql } from './linked-read-sql.js';
import { metadataIndexSql, metadataWrittenSql, OLD_SERVER, type MetadataIndexSql } from './metadata-index.js';
import { raisingPairSql, type FirstCondition } from './raising-pair-sql.js';

/**
 * Every SQL text postgresStorage sends, built once per store from validated identifiers.
 * Values always travel as parameters (`$1`…): keys, bytes and versions never become SQL text.
 */

/** Bumped when the table layout changes; `migrate()` brings older layouts up to it. */
export const SCHEMA_VERSION = 2;

/** The marker `migrate()` leaves on the table (`COMMENT ON TABLE`), read at first use. */
export const SCHEMA_MARKER = `savepoint store v${SCHEMA_VERSION}`;

/** SQLSTATE the batch function raises when a condition fails; the message is the 1-based operation index. */
export const CONFLICT_SQLSTATE = 'SP409';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/** Checks a schema or table name: a plain identifier, so the derived names fit in 63 bytes. */
export function assertIdentifier(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      `${what} must be a plain identifier (letters, digits, _; at most 48 characters, not starting with a digit)`,
      {
        details: { option: what },
      },
    );
  }
}

const quote = (name: string): string => `"${name}"`;

/** The statements of one store (one schema + table). */
export interface StoreSql {
  /** Schema-qualified, quoted table name (for messages and docs). */
  readonly table: string;
  /** DDL that creates (or upgrades to) the current layout; idempotent, run in one transaction. */
  readonly migrate: readonly string[];
  /**
   * The table's marker comment (`marker`), its metadata function's (`function_marker`): null when
   * missing, whether the metadata column is written by the statements (`metadata_written`),
   * whether the server is older than PostgreSQL 13, where it stays generated (`old_server`), and
   * whether the conflict function exists (`conflict_function`). Parameters: the table, the
   * metadata function's signature, the conflict function's.
   */
  readonly readMarker: string;
  /** The conflict function's signature, for `readMarker`. */
  readonly conflictFunction: string;
  readonly get: string;
  /** `getMany`: the rows of the keys in $1 (key_order[]), each with its 1-based place in $1 (`at`); absent keys give no row. */
  readonly getMany: string;
  /** The puts of a table whose metadata column the statements write and that has the conflict function (see {@link PutSql}). */
  readonly puts: PutSql;
  /** The same for a table without the conflict function (an earlier release made it, and the store may not migrate): the pairs in their `WITH` form. */
  readonly putsWithoutConflictFunction: PutSql;
  /** The puts of a table an older version made, whose column the server computes: their parameters lack the metadata. */
  readonly putsComputed: PutSql;
  readonly deleteAny: string;
  readonly deleteIfVersion: string;
  readonly listFrom: string;
  readonly listRange: string;
  /** A value and the keys its members name, in one statement (linked-read-sql.ts). */
  readonly linkedRead: string;
  /** `move`: the row of $1 given key $2 (key_order) / $3 (text) and a new version, unless $2 exists; `taken` says whether it did before. */
  readonly move: string;
  /** The metadata column and its listing (metadata-index.ts). */
  readonly metadata: MetadataIndexSql;
  readonly drop: readonly string[];
}

/**
 * The statements that write one value, or the pair. Parameters: the key's order bytes, text and
 * value ($1-$3), `putIfVersion`'s version ($4); then, where the statements write the metadata
 * column, the value's metadata as `jsonb` text and whether it is given (client-metadata.ts), after
 * the other parameters.
 */
export interface PutSql {
  /** Whether these statements take each value's metadata (client-metadata.ts): decided once, with the table's layout. */
  readonly sendsMetadata: boolean;
  readonly putAny: string;
  readonly putIfAbsent: string;
  readonly putIfVersion: string;
  /** A two-put batch as one plain statement, by the first put's condition (see {@link PairSql}). */
  readonly pair: PairSql;
  /**
   * Whether the pair's statements raise `CONFLICT_SQLSTATE` when the first put's condition fails
   * and answer a row a put (raising-pair-sql.ts), rather than the `WITH` form's one row.
   */
  readonly pairRaises: boolean;
  /** Any batch, through the batch function; with the metadata, each put's as two arrays after the six ($7, $8). */
  readonly batch: string;
  /** Several callers' batches in one statement (one transaction, one WAL flush), each applied or refused on its own; the groups' ends last. */
  readonly batches: string;
  /**
   * Several callers' lone puts and pairs as one plain statement, written for a count of put rows
   * and of delete rows (group-sql.ts); undefined where the metadata column is computed by the server.
   */
  readonly group: ((puts: number, deletes: number) => string) | undefined;
}

/**
 * A batch of two puts to two keys, the second unconditional, as one plain statement that writes
 * nothing when the first put's condition fails. Where the table has the conflict function, one
 * insert of both rows whose failed condition raises (raising-pair-sql.ts, {@link PutSql.pairRaises});
 * else the `WITH` form described here: the first put (by its condition), and the second only if
 * the first wrote. Parameters: the first key's order bytes, text and value ($1-$3),
 * the second's ($4-$6), the first's `ifVersion` ($7); with the metadata, the first value's
 * metadata and flag ($7, $8) and the second's ($9, $10) come before the version ($11). One row: each put's new version, the
 * first NULL when its condition failed. No PL/pgSQL call and no array parameters: each value
 * travels in binary, where the batch function's arrays travel as text the server parses.
 * `withDeletes(count)`: the same pair followed by `count` unconditional deletes of other keys (a
 * LangGraph checkpoint with the oldest one `keepLast` lets go and its writes), deleted only if the
 * first put wrote; the row's `gone` lists the 1-based places of the keys that existed. Up to
 * {@link DELETES_AS_PARAMETERS} keys, each key's order bytes is a parameter of its own after the
 * pair's (from the next after the version, if any), so the server plans the statement once per
 * connection: an array's length is known only at each call, and a plan for any length loses to one
 * for the length given, so an array would be planned again at every call (about as long as the
 * statement runs). More keys go as one array parameter.
 */
export interface PairSql {
  readonly any: string;
  readonly ifAbsent: string;
  readonly ifVersion: string;
  readonly withDeletes: (count: number) => PairStatements;
  /** A writer's checkpoint: a pair whose first put is a create, fenced by a check (see {@link CheckedPairSql}). */
  readonly checked: CheckedPairSql;
}

/** The three statements of a pair by its first put's condition. */
export type PairStatements = Omit<PairSql, 'withDeletes' | 'checked'>;

/**
 * A writer's checkpoint as one plain statement: a pair whose first put is a create (`ifAbsent`:
 * its history entry) and whose second is unconditional (`latest`), fenced by a check that another
 * key still holds a version (its run lease), and in `indexed` followed by a put of a third key on
 * its version (the run's index). Parameters: the pair's ($1-$6, with the metadata $7-$10), then the
 * check's key order and version, then for `indexed` the third key's order, text and value (with the
 * metadata, its metadata and flag) and its version. The check's row is locked `FOR SHARE` and the
 * third's `FOR UPDATE` before anything is written, and nothing is written unless both hold and the
 * create does: a failed condition writes nothing, as the batch function's rollback. The row gives
 * each put's new version, `checked` and `indexed` (those conditions held) and `present` (the
 * created key was there before), from which the caller names the condition that failed first in
 * the batch's order, as the function does.
 */
export interface CheckedPairSql {
  readonly plain: string;
  readonly indexed: string;
}

/** Most deletes a pair's statement names one parameter each (see {@link PairSql}). */
export const DELETES_AS_PARAMETERS = 16;

/**
 * How a put writes the row: `names` its columns after the value, `row` the row's expressions
 * (the version, by name `n.v`, from `from`), `onConflict` and `set` the update's.
 */
interface RowShape {
  readonly names: string;
  readonly row: (key: number, text: number, value: number) => string;
  readonly onConflict: string;
  readonly set: string;
  readonly from: string;
}

/** The shape of a put that leaves the metadata column to the server (an older layout): a new version each. */
function computedShape(next: string): RowShape {
  return {
    names: '',
    row: (k, x, v) => `VALUES ($${k}, $${x}, ${next}, $${v})`,
    onConflict: '',
    set: `version = ${next}`,
    from: '',
  };
}

/**
 * The shape of a put that gives the metadata (`$meta`, jsonb text) and, when `$given`, the new
 * version as `metadata_version`, so the trigger leaves the column as given; else the trigger
 * computes it. The version is drawn once, in `from`, for both columns.
 */
function givenShape(next: string, meta: number, given: number): RowShape {
  const from = ` FROM (SELECT ${next} AS v) AS n`;
  const metadataVersion = `CASE WHEN $${given}::boolean THEN n.v END`;
  return {
    names: ', metadata, metadata_version',
    row: (k, x, v) => `SELECT $${k}::bytea, $${x}::text, n.v, $${v}::bytea, $${meta}::jsonb, ${metadataVersion}${from}`,
    onConflict: ', metadata = EXCLUDED.metadata, metadata_version = EXCLUDED.metadata_version',
    set: `version = n.v, metadata = $${meta}::jsonb, metadata_version = ${metadataVersion}`,
    from,
  };
}

const UPSERT =
  'ON CONFLICT (key_order) DO UPDATE SET value = EXCLUDED.value, key = EXCLUDED.key, version = EXCLUDED.version, updated_at = now()';

/** What a lone put answers: the row's new version, as text (a bigint's exact digits). */
const RETURNING_TEXT = 'RETURNING s.version::text AS version';
/** What a put inside a pair's `WITH` answers: the version as a bigint, for the statement's own SELECT. */
const RETURNING_BIGINT = 'RETURNING s.version';

/**
 * One value's put by its condition: `insert` the shape of the inserts, `update` of the update,
 * whose `ifVersion` is `$version`; each ends with `returning`.
 */
function putStatements(
  t: string,
  insert: RowShape,
  update: RowShape,
  version: number,
  returning: string,
): Pick<PutSql, 'putAny' | 'putIfAbsent' | 'putIfVersion'> {
  const into = `INSERT INTO ${t} AS s (key_order, key, version, value${insert.names}) ${insert.row(1, 2, 3)}`;
  return {
    putAny: `${into}
  ${UPSERT}${insert.onConflict}
  ${returning}`,
    putIfAbsent: `${into}
  ON CONFLICT (key_order) DO NOTHING ${returning}`,
    putIfVersion: `UPDATE ${t} AS s SET value = $3, key = $2, ${update.set}, updated_at = now()${update.from}
  WHERE s.key_order = $1 AND s.version = $${version}::bigint ${returning}`,
  };
}

/**
 * The pair's statements: with `conflict` (the conflict function's quoted name; the metadata
 * written) one insert whose failed condition raises (raising-pair-sql.ts), else the `WITH` form.
 */
function pairStatements(t: string, next: string, metadata: boolean, conflict: string | undefined): PairSql {
  const firstShape = metadata ? givenShape(next, 7, 8) : computedShape(next);
  const secondShape = metadata ? givenShape(next, 9, 10) : computedShape(next);
  const version = metadata ? 11 : 7;
  // The second row only if the first put wrote.
  const second = metadata
    ? `${secondShape.row(4, 5, 6)} WHERE EXISTS (SELECT 1 FROM first)`
    : `SELECT $4::bytea, $5::text, ${next}, $6::bytea WHERE EXISTS (SELECT 1 FROM first)`;
  const withForm = (first: string, deletes?: string): string => `WITH first AS (
  ${first}
), second AS (
  INSERT INTO ${t} AS s (key_order, key, version, value${secondShape.names}) ${second}
  ${UPSERT}${secondShape.onConflict}
  RETURNING s.version
)${
    deletes === undefined
      ? ''
      : `, gone AS (
  DELETE FROM ${t} AS d USING ${deletes} AS k(key_order, at)
  WHERE d.key_order = k.key_order AND EXISTS (SELECT 1 FROM first) RETURNING k.at
)`
  }
SELECT (SELECT version::text FROM first) AS first, (SELECT version::text FROM second) AS second${
    deletes === undefined ? '' : ', ARRAY(SELECT at::int FROM gone) AS gone'
  }`;
  const firsts = putStatements(t, firstShape, firstShape, version, RETURNING_BIGINT);
  const firstOf = { any: firsts.putAny, ifAbsent: firsts.putIfAbsent, ifVersion: firsts.putIfVersion };
  const pair = (condition: FirstCondition, deletes?: string): string =>
    conflict !== undefined ? raisingPairSql(t, next, conflict, condition, deletes) : withForm(firstOf[condition], deletes);
  const withDeletes = new Map<number, PairStatements>();
  return {
    any: pair('any'),
    ifAbsent: pair('ifAbsent'),
    ifVersion: pair('ifVersion'),
    checked: checkedPairStatements(t, next, metadata),
    withDeletes: (count) => {
      // Counts beyond the bound share the array form: one entry for them all.
      const form = Math.min(count, DELETES_AS_PARAMETERS + 1);
      let statements = withDeletes.get(form);
      if (!statements) {
        statements = {
          any: pair('any', deletedKeys(version, form)),
          ifAbsent: pair('ifAbsent', deletedKeys(version, form)),
          ifVersion: pair('ifVersion', deletedKeys(version + 1, form)),
        };
        withDeletes.set(form, statements);
      }
      return statements;
    },
  };
}

/** The statements of {@link CheckedPairSql} for a table whose metadata column the statements write (`metadata`), or not. */
function checkedPairStatements(t: string, next: string, metadata: boolean): CheckedPairSql {
  const firstShape = metadata ? givenShape(next, 7, 8) : computedShape(next);
  const secondShape = metadata ? givenShape(next, 9, 10) : computedShape(next);
  const c = metadata ? 11 : 7; // the check's key order, then its version
  const i = c + 2; // the third put's key order, text and value
  const thirdShape = metadata ? givenShape(next, i + 3, i + 4) : computedShape(next);
  const thirdVersion = metadata ? i + 5 : i + 3;
  const row = (shape: RowShape, k: number, when: string): string =>
    metadata
      ? `${shape.row(k, k + 1, k + 2)} WHERE ${when}`
      : `SELECT $${k}::bytea, $${k + 1}::text, ${next}, $${k + 2}::bytea WHERE ${when}`;
  const statement = (indexed: boolean): string => {
    const holds = indexed ? 'EXISTS (SELECT 1 FROM chk) AND EXISTS (SELECT 1 FROM idx)' : 'EXISTS (SELECT 1 FROM chk)';
    const lockThird = `, idx AS (
  SELECT 1 FROM ${t} AS x WHERE x.key_order = $${i}::bytea AND x.version = $${thirdVersion}::bigint FOR UPDATE
)`;
    const third = `, third AS (
  UPDATE ${t} AS s SET value = $${i + 2}::bytea, key = $${i + 1}::text, ${thirdShape.set}, updated_at = now()${thirdShape.from}
  WHERE s.key_order = $${i}::bytea AND s.version = $${thirdVersion}::bigint AND EXISTS (SELECT 1 FROM second) ${RETURNING_BIGINT}
)`;
    return `WITH chk AS (
  SELECT 1 FROM ${t} AS c WHERE c.key_order = $${c}::bytea AND c.version = $${c + 1}::bigint FOR SHARE
)${indexed ? lockThird : ''}, first AS (
  INSERT INTO ${t} AS s (key_order, key, version, value${firstShape.names}) ${row(firstShape, 1, holds)}
  ON CONFLICT (key_order) DO NOTHING ${RETURNING_BIGINT}
), second AS (
  INSERT INTO ${t} AS s (key_order, key, version, value${secondShape.names}) ${row(secondShape, 4, 'EXISTS (SELECT 1 FROM first)')}
  ${UPSERT}${secondShape.onConflict}
  ${RETURNING_BIGINT}
)${indexed ? third : ''}
SELECT (SELECT version::text FROM first) AS first, (SELECT version::text FROM second) AS second${
      indexed ? ', (SELECT version::text FROM third) AS third, EXISTS (SELECT 1 FROM idx) AS indexed' : ''
    }, EXISTS (SELECT 1 FROM chk) AS checked, EXISTS (SELECT 1 FROM ${t} AS p WHERE p.key_order = $1) AS present`;
  };
  return { plain: statement(false), indexed: statement(true) };
}

/** The deleted keys and their 1-based places as a pair's statement reads them, from parameter `$first` on (see {@link PairSql}). */
function deletedKeys(first: number, count: number): string {
  if (count > DELETES_AS_PARAMETERS) return `unnest($${first}::bytea[]) WITH ORDINALITY`;
  const rows = Array.from({ length: count }, (_, i) => `($${first + i}::bytea, ${i + 1})`);
  return `(VALUES ${rows.join(', ')})`;
}

/**
 * The puts of a table whose metadata column the statements write (`metadata`), or of one whose
 * column is computed; with `conflict`, the conflict function's quoted name, its pairs raise.
 */
function putSql(t: string, next: string, metadata: boolean, fn: string, fns: string, conflict?: string): PutSql {
  const given = metadata ? ', $7::jsonb[], $8::boolean[]' : '';
  return {
    sendsMetadata: metadata,
    batch: `SELECT out_op AS op, out_version::text AS version, out_existed AS existed FROM ${metadata ? metaName(fn) : fn}($1, $2, $3, $4, $5, $6${given})`,
    batches: `SELECT out_group AS "group", out_op AS op, out_version::text AS version, out_existed AS existed, out_failed AS failed
FROM ${metadata ? metaName(fns) : fns}($1, $2, $3, $4, $5, $6${given}, $${metadata ? 9 : 7})`,
    ...(metadata
      ? putStatements(t, givenShape(next, 4, 5), givenShape(next, 5, 6), 4, RETURNING_TEXT)
      : putStatements(t, computedShape(next), computedShape(next), 4, RETURNING_TEXT)),
    pair: pairStatements(t, next, metadata, conflict),
    pairRaises: conflict !== undefined,
    group: metadata ? groupStatements(t, next) : undefined,
  };
}

/** The set group's statements by their row counts, each built at first use. */
function groupStatements(t: string, next: string): (puts: number, deletes: number) => string {
  const built = new Map<string, string>();
  return (puts, deletes) => {
    const shape = `${puts}:${deletes}`;
    let text = built.get(shape);
    if (text === undefined) built.set(shape, (text = groupSql(t, next, puts, deletes)));
    return text;
  };
}

/**
 * How the batch function's puts write a row: the version `n` drawn once, then given as
 * `metadata_version` where the caller gave the metadata (`metas[i]`, when `given[i]`), so the
 * trigger leaves the column as given; or, for the function older versions call, a new version
 * each and no metadata (the trigger computes it).
 */
function batchRowShape(next: string, metadata: boolean) {
  const metadataVersion = 'CASE WHEN given[i] THEN n END';
  return metadata
    ? {
        draw: `n := ${next};\n      `,
        version: 'n',
        names: ', metadata, metadata_version',
        values: `, metas[i], ${metadataVersion}`,
        set: `, metadata = metas[i], metadata_version = ${metadataVersion}`,
        onConflict: ', metadata = EXCLUDED.metadata, metadata_version = EXCLUDED.metadata_version',
      }
    : { draw: '', version: next, names: '', values: '', set: '', onConflict: '' };
}

/**
 * The body of the table's batch function: each operation in order, a failed condition raising
 * CONFLICT_SQLSTATE with its 1-based index. `t` is the quoted table, `next` the expression of a
 * new version; `metadata`: the overload that takes each put's metadata (`metas`, `given`).
 */
function batchFunctionBody(t: string, next: string, metadata: boolean): string {
  const r = batchRowShape(next, metadata);
  return `
DECLARE
  i integer;
  v bigint;${metadata ? '\n  n bigint;' : ''}
  placeholders bytea[] := '{}';
BEGIN
  FOR i IN 1 .. coalesce(array_length(kinds, 1), 0) LOOP
    v := NULL;
    IF kinds[i] = 'put' THEN
      ${r.draw}IF absent[i] THEN
        INSERT INTO ${t} AS s (key_order, key, version, value${r.names}) VALUES (keys[i], texts[i], ${r.version}, vals[i]${r.values})
          ON CONFLICT (key_order) DO NOTHING RETURNING s.version INTO v;
      ELSIF vers[i] IS NOT NULL THEN
        UPDATE ${t} AS s SET value = vals[i], key = texts[i], version = ${r.version}, updated_at = now()${r.set}
          WHERE s.key_order = keys[i] AND s.version = vers[i] RETURNING s.version INTO v;
      ELSE
        INSERT INTO ${t} AS s (key_order, key, version, value${r.names}) VALUES (keys[i], texts[i], ${r.version}, vals[i]${r.values})
          ON CONFLICT (key_order) DO UPDATE SET value = EXCLUDED.value, key = EXCLUDED.key, version = EXCLUDED.version, updated_at = now()${r.onConflict}
          RETURNING s.version INTO v;
      END IF;
      IF v IS NULL THEN RAISE EXCEPTION USING ERRCODE = '${CONFLICT_SQLSTATE}', MESSAGE = i::text; END IF;
      out_op := i; out_version := v; out_existed := NULL; RETURN NEXT;
    ELSIF kinds[i] = 'delete' THEN
      DELETE FROM ${t} AS s WHERE s.key_order = keys[i] AND (vers[i] IS NULL OR s.version = vers[i]) RETURNING s.version INTO v;
      IF v IS NULL AND vers[i] IS NOT NULL THEN RAISE EXCEPTION USING ERRCODE = '${CONFLICT_SQLSTATE}', MESSAGE = i::text; END IF;
      out_op := i; out_version := NULL; out_existed := v IS NOT NULL; RETURN NEXT;
    ELSE
      IF absent[i] THEN
        -- An absent key cannot be row-locked, so a placeholder row holds its place until
        -- commit (a racing create waits on it, then sees it gone) and is removed below.
        INSERT INTO ${t} AS s (key_order, key, version, value) VALUES (keys[i], texts[i], ${next}, '')
          ON CONFLICT (key_order) DO NOTHING RETURNING s.version INTO v;
        placeholders := placeholders || keys[i];
      ELSE
        -- FOR SHARE keeps the checked row from changing until this transaction ends.
        SELECT s.version INTO v FROM ${t} AS s WHERE s.key_order = keys[i] AND s.version = vers[i] FOR SHARE;
      END IF;
      IF v IS NULL THEN RAISE EXCEPTION USING ERRCODE = '${CONFLICT_SQLSTATE}', MESSAGE = i::text; END IF;
      out_op := i; out_version := NULL; out_existed := NULL; RETURN NEXT;
    END IF;
  END LOOP;
  IF cardinality(placeholders) > 0 THEN
    DELETE FROM ${t} AS s WHERE s.key_order = ANY (placeholders);
  END IF;
END`;
}

/**
 * The body of the function that applies several batches in one transaction: each group (its
 * operations end at `ends[g]`) is one call of the batch function `fn` in a block of its own,
 * so a group whose condition fails is rolled back alone and reported (`out_failed`: its failed
 * operation's 1-based index within the group), and the other groups commit.
 */
function batchesFunctionBody(fn: string, metadata: boolean): string {
  const metadataArgs = metadata ? ', metas[s:e], given[s:e]' : '';
  return `
DECLARE
  g integer;
  s integer := 1;
  e integer;
  ops integer[];
  versions bigint[];
  existed boolean[];
BEGIN
  FOR g IN 1 .. coalesce(array_length(ends, 1), 0) LOOP
    e := ends[g];
    BEGIN
      SELECT array_agg(b.out_op ORDER BY b.out_op), array_agg(b.out_version ORDER BY b.out_op), array_agg(b.out_existed ORDER BY b.out_op)
        INTO ops, versions, existed
        FROM ${fn}(kinds[s:e], keys[s:e], texts[s:e], vals[s:e], vers[s:e], absent[s:e]${metadataArgs}) AS b;
      FOR i IN 1 .. coalesce(array_length(ops, 1), 0) LOOP
        out_group := g; out_op := ops[i]; out_version := versions[i]; out_existed := existed[i]; out_failed := NULL; RETURN NEXT;
      END LOOP;
    EXCEPTION WHEN SQLSTATE '${CONFLICT_SQLSTATE}' THEN
      out_group := g; out_op := NULL; out_version := NULL; out_existed := NULL; out_failed := SQLERRM::integer; RETURN NEXT;
    END;
    s := e + 1;
  END LOOP;
END`;
}

/** The quoted name of the function that takes the metadata too, beside `fn` (a name of its own: no overload to make a drop by name ambiguous). */
const metaName = (fn: string): string => `${fn.slice(0, -1)}_meta"`;

const BATCH_ARGS = 'kinds text[], keys bytea[], texts text[], vals bytea[], vers bigint[], absent boolean[]';
const BATCH_RESULT = 'RETURNS TABLE (out_op integer, out_version bigint, out_existed boolean)';
const BATCHES_RESULT = 'RETURNS TABLE (out_group integer, out_op integer, out_version bigint, out_existed boolean, out_failed integer)';

/**
 * The batch and batches functions: those older versions call (six arrays, and the groups' ends),
 * and `<table>_batch_meta` and `<table>_batches_meta`, which this version calls: they take each
 * put's metadata too (`metas`, `given`).
 */
function batchFunctions(t: string, next: string, fn: string, fns: string): string[] {
  const given = 'metas jsonb[], given boolean[]';
  const [fnMeta, fnsMeta] = [metaName(fn), metaName(fns)];
  return [
    `CREATE OR REPLACE FUNCTION ${fn}(${BATCH_ARGS})
${BATCH_RESULT} LANGUAGE plpgsql AS $savepoint$${batchFunctionBody(t, next, false)}
$savepoint$`,
    `CREATE OR REPLACE FUNCTION ${fns}(${BATCH_ARGS}, ends integer[])
${BATCHES_RESULT} LANGUAGE plpgsql AS $savepoint$${batchesFunctionBody(fn, false)}
$savepoint$`,
    `CREATE OR REPLACE FUNCTION ${fnMeta}(${BATCH_ARGS}, ${given})
${BATCH_RESULT} LANGUAGE plpgsql AS $savepoint$${batchFunctionBody(t, next, true)}
$savepoint$`,
    `CREATE OR REPLACE FUNCTION ${fnsMeta}(${BATCH_ARGS}, ${given}, ends integer[])
${BATCHES_RESULT} LANGUAGE plpgsql AS $savepoint$${batchesFunctionBody(fnMeta, true)}
$savepoint$`,
  ];
}

/**
 * The conflict function: raises `CONFLICT_SQLSTATE` with the message `op` (an operation's 1-based
 * place in its batch), as the batch function does, for the plain statements whose failed condition
 * rolls them back whole (raising-pair-sql.ts). Called only when a condition fails.
 */
function conflictFunctionSql(fn: string): string {
  return `CREATE OR REPLACE FUNCTION ${fn}(op integer) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $savepoint$
BEGIN
  RAISE EXCEPTION USING ERRCODE = '${CONFLICT_SQLSTATE}', MESSAGE = op::text;
END
$savepoint$`;
}

/** Builds the statements of the store `schema`.`table`. */
export function storeSql(schema: string, table: string): StoreSql {
  assertIdentifier(schema, 'schema');
  assertIdentifier(table, 'table');
  const t = `${quote(schema)}.${quote(table)}`;
  const seq = `${quote(schema)}.${quote(`${table}_version_seq`)}`;
  const fn = `${quote(schema)}.${quote(`${table}_batch`)}`;
  const next = `nextval('${seq.replace(/'/g, "''")}')`;
  const fns = `${quote(schema)}.${quote(`${table}_batches`)}`;
  const conflict = `${quote(schema)}.${quote(`${table}_conflict`)}`;
  const listCols = 'key_order, version::text AS version, octet_length(value) AS size';
  const metadata = metadataIndexSql(schema, table);
  return {
    table: t,
    migrate: [
      `CREATE SCHEMA IF NOT EXISTS ${quote(schema)}`,
      `CREATE SEQUENCE IF NOT EXISTS ${seq} AS bigint`,
      `CREATE TABLE IF NOT EXISTS ${t} (
  key_order bytea PRIMARY KEY,
  key text NOT NULL,
  version bigint NOT NULL,
  value bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`,
      // Before anything else locks the table: a put locks the table, then the sequence.
      ...metadata.migrate,
      `ALTER SEQUENCE ${seq} OWNED BY ${t}.version`,
      ...batchFunctions(t, next, fn, fns),
      conflictFunctionSql(conflict),
      `COMMENT ON TABLE ${t} IS '${SCHEMA_MARKER}'`,
    ],
    readMarker: `SELECT obj_description(to_regclass($1), 'pg_class') AS marker, obj_description(to_regprocedure($2), 'pg_proc') AS function_marker,
  ${metadataWrittenSql(metadata.triggerName)} AS metadata_written, ${OLD_SERVER} AS old_server, to_regprocedure($3) IS NOT NULL AS conflict_function`,
    conflictFunction: `${conflict}(integer)`,
    get: `SELECT value, version::text AS version FROM ${t} WHERE key_order = $1`,
    getMany: `SELECT k.at::int AS at, s.value, s.version::text AS version
FROM unnest($1::bytea[]) WITH ORDINALITY AS k(key_order, at) JOIN ${t} AS s ON s.key_order = k.key_order`,
    puts: putSql(t, next, true, fn, fns, conflict),
    putsWithoutConflictFunction: putSql(t, next, true, fn, fns),
    putsComputed: putSql(t, next, false, fn, fns),
    deleteAny: `DELETE FROM ${t} WHERE key_order = $1 RETURNING 1`,
    deleteIfVersion: `DELETE FROM ${t} WHERE key_order = $1 AND version = $2 RETURNING 1`,
    listFrom: `SELECT ${listCols} FROM ${t} WHERE key_order >= $1 ORDER BY key_order LIMIT $2`,
    listRange: `SELECT ${listCols} FROM ${t} WHERE key_order >= $1 AND key_order < $2 ORDER BY key_order LIMIT $3`,
    linkedRead: linkedReadSql(t),
    move: `WITH moved AS (
  UPDATE ${t} AS s SET key_order = $2, key = $3, version = ${next}, updated_at = now()
  WHERE s.key_order = $1 AND NOT EXISTS (SELECT 1 FROM ${t} WHERE key_order = $2) RETURNING 1
)
SELECT (SELECT count(*) FROM moved)::int AS moved, EXISTS (SELECT 1 FROM ${t} WHERE key_order = $2) AS taken`,
    metadata,
    drop: [
      `DROP TABLE IF EXISTS ${t}`,
      `DROP FUNCTION IF EXISTS ${fns}(text[], bytea[], text[], bytea[], bigint[], boolean[], integer[])`,
      `DROP FUNCTION IF EXISTS ${metaName(fns)}(text[], bytea[], text[], bytea[], bigint[], boolean[], jsonb[], boolean[], integer[])`,
      `DROP FUNCTION IF EXISTS ${fn}(text[], bytea[], text[], bytea[], bigint[], boolean[])`,
      `DROP FUNCTION IF EXISTS ${metaName(fn)}(text[], bytea[], text[], bytea[], bigint[], boolean[], jsonb[], boolean[])`,
      `DROP FUNCTION IF EXISTS ${conflict}(integer)`,
      ...metadata.drop,
    ],
  };
}
