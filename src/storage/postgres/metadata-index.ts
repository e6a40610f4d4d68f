import { CHUNKED_MARKER } from '../../codec/chunking.js';

/**
 * The table's metadata column: each row's metadata (contract/metadata-listing.ts) as `jsonb`,
 * written by the statement that writes the value (no other statement, no other round trip), so
 * `listWhereMetadata` filters on it in SQL. This version's statements send the column's value
 * with the row (client-metadata.ts) and set `metadata_version` to the row's new `version`; a
 * trigger computes it with the column's function for every other write (an older version's,
 * which names neither column, or a value the store left to the server), so no write leaves a
 * stale value.
 *
 * NULL is "unknown" (listed whatever the filter): bytes that are not a JSON object, a chunk
 * envelope, a `metadata_blob`, metadata LangChain's reviver would turn into other values. Values
 * under keys not ending `.json` are not parsed at all. A value the store holds as ciphertext
 * (encryptedStorage over this store) is no JSON: its column is NULL, so no plaintext lands there.
 */
export interface MetadataIndexSql {
  /** DDL, run after the table exists and before anything else locks it: the function the column is computed by, the trigger's, then the columns and the trigger. */
  readonly migrate: readonly string[];
  readonly listFrom: string;
  readonly listRange: string;
  /** Newest first: below `$4` (the prefix's upper bound, then the last key returned), or from the top when the prefix has none. */
  readonly listDescendingFrom: string;
  readonly listDescendingRange: string;
  readonly drop: readonly string[];
  /** The function's signature, for `to_regprocedure` (its revision is read with the table's marker). */
  readonly functionSignature: string;
  /** The trigger that computes the column for writes that do not give it (see {@link metadataWrittenSql}). */
  readonly triggerName: string;
}

const quote = (name: string): string => `"${name}"`;

/**
 * The revision of the column's function this version writes (see {@link METADATA_FUNCTION_MARKER}).
 * r4 has r3's body; its migration also makes the column one the statements write (a plain column,
 * `metadata_version` and the trigger), so a table an older version set up is upgraded at first use.
 */
const METADATA_FUNCTION_REVISION = 4;

/**
 * The revision of the column's function, left on it (`COMMENT ON FUNCTION`) and read with the
 * table's marker: a table at the current layout whose function is older gets the current body
 * from `migrate()` at first use (with `autoMigrate: false` the older body stays until
 * `migrate()` runs; it computes the same column). Every revision computes the same column from
 * the same bytes, so rows written before keep their values and older versions of the store work
 * with either body. (One exception, which the contract allows: a document naming no metadata
 * whose number is beyond `numeric`'s range is `{}` since r2, its metadata by the contract, where
 * `jsonb` refused it as unknown.)
 */
export const METADATA_FUNCTION_MARKER = `savepoint metadata r${METADATA_FUNCTION_REVISION}`;

/**
 * Whether a function's revision marker is this version's or a later one: a newer version's body
 * computes the same column, so it is kept rather than put back to this one's at every start of
 * this version beside it.
 */
export function isCurrentMetadataFunction(marker: string | null | undefined): boolean {
  const revision = /^savepoint metadata r(\d+)$/.exec(marker ?? '')?.[1];
  return revision !== undefined && Number(revision) >= METADATA_FUNCTION_REVISION;
}

/** Bytes as a `bytea` literal (hex). */
const bytesLiteral = (text: string): string => `'\\x${Buffer.from(text, 'utf8').toString('hex')}'::bytea`;

/**
 * The body of the column's function: `k` the key, `v` the value. Never raises: a value it cannot read is NULL.
 *
 * A JSON document whose bytes spell none of `"metadata`, the chunk marker or `\u` has no member
 * named `metadata`, `metadata_blob` or the marker (each name must appear as written: it has no
 * character JSON escapes other than by `\u`), so it is checked as JSON without being built as
 * `jsonb`, several times cheaper on a document of long strings (a task's writes, a thread's head).
 */
function metadataFunctionBody(): string {
  const marker = CHUNKED_MARKER.replace(/'/g, "''");
  const named = [bytesLiteral('"metadata'), bytesLiteral(CHUNKED_MARKER), bytesLiteral('\\u')];
  // Few PL/pgSQL statements, each a single expression: every statement the interpreter steps
  // through costs the write that computes the column, and the rules are decided in one CASE.
  return `
DECLARE
  n integer := octet_length(v);
  doc jsonb;
  meta jsonb;
BEGIN
  IF right(k, 5) <> '.json' OR n < 2 OR get_byte(v, 0) <> 123 OR get_byte(v, n - 1) <> 125 THEN RETURN NULL; END IF;
  BEGIN
    IF ${named.map((b) => `position(${b} IN v) = 0`).join(' AND ')} THEN
      -- Checked as JSON (a parse that builds nothing): '{}', or NULL below when it is not JSON.
      RETURN CASE WHEN convert_from(v, 'UTF8')::json IS NULL THEN NULL ELSE '{}'::jsonb END;
    END IF;
    doc := convert_from(v, 'UTF8')::jsonb;
  EXCEPTION WHEN OTHERS THEN
    RETURN NULL; -- not UTF-8, not JSON, or JSON that jsonb refuses (a NUL escape)
  END;
  meta := doc -> 'metadata';
  RETURN CASE
    WHEN jsonb_typeof(doc) <> 'object' OR doc ?| ARRAY['${marker}', 'metadata_blob'] THEN NULL
    WHEN meta IS NULL OR jsonb_typeof(meta) <> 'object' THEN '{}'::jsonb
    WHEN strpos(meta::text, '"lc"') > 0 THEN NULL
    ELSE meta
  END;
END`;
}

/**
 * The trigger's body, run for a row whose `metadata_version` is not its `version`: a write that
 * did not give its metadata (an older version's statements, which name neither column, a value
 * this store left to the server, a `move`). Every write sets `version` to a new value, so such a
 * write never keeps the metadata of the row's previous bytes.
 */
function metadataTriggerBody(fn: string): string {
  return `
BEGIN
  NEW.metadata := ${fn}(NEW.key, NEW.value);
  NEW.metadata_version := NEW.version;
  RETURN NEW;
END`;
}

/** A server before PostgreSQL 13, which cannot make a generated column a plain one. */
export const OLD_SERVER = "current_setting('server_version_num')::int < 130000";

/**
 * An attribute named `column` of the table `relation` (an SQL expression of its oid) exists
 * (`extra`: and holds this condition on `a`). The first-use query and the migration ask the same.
 */
const columnExists = (relation: string, column: string, extra = ''): string =>
  `EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = ${relation} AND a.attname = '${column}' AND NOT a.attisdropped${extra})`;

/** The table `relation` (an SQL expression of its oid) has the trigger named `trigger`. */
const triggerExists = (relation: string, trigger: string): string =>
  `EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = ${relation} AND tgname = '${trigger}')`;

/** The column is a plain one, which the statements may write (`PLAIN`), or one the server generates (`GENERATED`). */
const PLAIN = " AND a.attgenerated = ''";
const GENERATED = " AND a.attgenerated <> ''";

/**
 * The column as the statements write it, from any earlier layout, each step only when needed:
 * ALTER TABLE locks the table exclusively even when it changes nothing, and a second process
 * migrating at once (it read the marker before the first committed) would then deadlock with
 * puts already running. A table without the column gets it computed for every row (a rewrite,
 * once); a generated column keeps its values as a plain one (`DROP EXPRESSION`, no rewrite).
 */
function metadataColumnDdl(t: string, fn: string, trigger: string, triggerFn: string): string {
  const table = `'${t}'::regclass`;
  return `DO $savepoint$ BEGIN
  IF NOT ${columnExists(table, 'metadata')} THEN
    ALTER TABLE ${t} ADD COLUMN metadata jsonb GENERATED ALWAYS AS (${fn}(key, value)) STORED;
  END IF;
  -- DROP EXPRESSION is PostgreSQL 13's: on 12 the column stays generated and the store sends no metadata.
  IF ${OLD_SERVER} THEN RETURN; END IF;
  IF NOT ${columnExists(table, 'metadata_version')} THEN
    ALTER TABLE ${t} ADD COLUMN metadata_version bigint;
  END IF;
  IF ${columnExists(table, 'metadata', GENERATED)} THEN
    ALTER TABLE ${t} ALTER COLUMN metadata DROP EXPRESSION;
  END IF;
  IF NOT ${triggerExists(table, trigger)} THEN
    -- A condition, not a test in the function: a write that gives its metadata calls no PL/pgSQL.
    CREATE TRIGGER ${quote(trigger)} BEFORE INSERT OR UPDATE ON ${t} FOR EACH ROW
      WHEN (NEW.metadata_version IS DISTINCT FROM NEW.version) EXECUTE FUNCTION ${triggerFn}();
  END IF;
END $savepoint$`;
}

/**
 * Whether the table's metadata column is written by the statements (a plain column, the
 * `metadata_version` column and the trigger): `$1` the quoted table. False for a table an older version made, where
 * the column is generated and a statement naming it fails.
 */
export function metadataWrittenSql(trigger: string): string {
  const table = 'to_regclass($1)';
  return `(${columnExists(table, 'metadata', PLAIN)} AND ${columnExists(table, 'metadata_version')} AND ${triggerExists(table, trigger)})`;
}

/** The metadata column's statements of the store `schema`.`table` (identifiers checked by the caller). */
export function metadataIndexSql(schema: string, table: string): MetadataIndexSql {
  const t = `${quote(schema)}.${quote(table)}`;
  const fn = `${quote(schema)}.${quote(`${table}_metadata`)}`;
  const trigger = `${table}_metadata`;
  const triggerFn = `${quote(schema)}.${quote(`${table}_metadata_row`)}`;
  const cols = 'key_order, version::text AS version, octet_length(value) AS size';
  const matches = '(metadata IS NULL OR metadata @> $2::jsonb)';
  return {
    migrate: [
      `CREATE OR REPLACE FUNCTION ${fn}(k text, v bytea) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $savepoint$${metadataFunctionBody()}
$savepoint$`,
      `COMMENT ON FUNCTION ${fn}(text, bytea) IS '${METADATA_FUNCTION_MARKER}'`,
      `CREATE OR REPLACE FUNCTION ${triggerFn}() RETURNS trigger LANGUAGE plpgsql AS $savepoint$${metadataTriggerBody(fn)}
$savepoint$`,
      metadataColumnDdl(t, fn, trigger, triggerFn),
    ],
    listFrom: `SELECT ${cols} FROM ${t} WHERE key_order >= $1 AND ${matches} ORDER BY key_order LIMIT $3`,
    listRange: `SELECT ${cols} FROM ${t} WHERE key_order >= $1 AND key_order < $4 AND ${matches} ORDER BY key_order LIMIT $3`,
    listDescendingFrom: `SELECT ${cols} FROM ${t} WHERE key_order >= $1 AND ${matches} ORDER BY key_order DESC LIMIT $3`,
    listDescendingRange: `SELECT ${cols} FROM ${t} WHERE key_order >= $1 AND key_order < $4 AND ${matches} ORDER BY key_order DESC LIMIT $3`,
    drop: [`DROP FUNCTION IF EXISTS ${triggerFn}()`, `DROP FUNCTION IF EXISTS ${fn}(text, bytea)`],
    functionSignature: `${fn}(text, bytea)`,
    triggerName: trigger,
  };
}
