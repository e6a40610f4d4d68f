/*
 * `getLinked` (contract/linked-read.ts) in one statement: the value, the member texts its links
 * take (computed in SQL by the contract's rule), the linked key's row and the listed prefix's
 * rows, read from the primary-key index in one snapshot. The value is parsed in place only when
 * it is small, starts with `{`, is ASCII, and its escapes are JSON's short ones (`\"`, `\\`,
 * `\/`, `\b`, `\f`, `\n`, `\r`, `\t`): such text is valid UTF-8, and jsonb reads it as JSON.parse
 * does, so the member's text is the same. That takes in a LangGraph checkpoint document, whose
 * serialized values are JSON text in strings (a head has no escape at all). `\u` escapes are
 * left out: jsonb refuses some that JSON.parse takes (`\u0000`, a lone surrogate), and a refusal
 * fails the statement. Anything else leaves the links unfollowed (the caller reads them itself).
 */

import { FIRST_UNDER_MAX } from '../../contract/linked-read.js';

/** Values parsed in place are at most this long: a pointer is small, and larger values leave their links to the caller. */
const PARSED_MAX_BYTES = 65_536;

/**
 * Matches `encode(value, 'escape')` of a value that is not ASCII: that form writes a byte of the
 * high half (or zero) as a backslash and three octal digits, and doubles every backslash, so such
 * a byte is an odd run of backslashes before a digit (an even run before a digit is the value's
 * own backslashes, then a digit: `\\0` in JSON, an escaped backslash before a `0`).
 */
const NOT_ASCII = String.raw`(^|[^\\])(\\\\)*\\[0-7]`;

/**
 * Matches an ASCII text holding a backslash that does not start one of JSON's short escapes: the
 * run of backslashes before it is even (each pair is the escape of one backslash), and the
 * character after it is not one of `"\\/bfnrt` (or the text ends there). `\u` escapes match.
 */
const OTHER_ESCAPE = String.raw`(^|[^\\])(\\\\)*\\([^"\\/bfnrt]|$)`;

/**
 * The most rows each part under a range is read in place; a part that has more is left to the
 * caller (the statement reads one row more to know). Why: the server plans this statement once,
 * without the parameters' values, so it estimates each range as a share of the table; on a table
 * of a few hundred thousand rows the plan's estimated cost passes `jit_above_cost` (100,000 by
 * default), and every call then compiles the plan (100–450 ms) for a read of a few rows. A
 * bounded part's cost is bounded whatever the table's size: at most about 4 × its rows (a random
 * page each), so the statement's stays under about 65,000 at worst (and near 2,000 when rows are
 * stored in key order).
 */
export const LINKED_READ_LIMITS = {
  /** `listed` (the list link): a checkpoint's writes. */
  listed: 512,
  /** `keys` and `keysIfAbsent`: a thread's keys (a pruning saver's thread holds a few hundred). */
  keys: 1024,
  /** `first`: the most any caller may ask for. */
  first: FIRST_UNDER_MAX,
  /** `entries`: a run's listing (a writer's run 10,000 checkpoints long holds about 10,000 files). */
  entries: 12_288,
} as const;

/** SQL for the text a link takes from member `$n` of `doc` (NULL: it names no key), as contract/linked-read.ts's memberText. */
function memberSql(param: string): string {
  const m = `(doc -> ${param}::text)`;
  const n = `((doc ->> ${param}::text)::numeric)`;
  return `CASE jsonb_typeof(${m})
    WHEN 'string' THEN CASE WHEN (doc ->> ${param}::text) ~ '^[A-Za-z0-9_-]{1,128}$' THEN doc ->> ${param}::text END
    WHEN 'number' THEN CASE WHEN ${n} = trunc(${n}) AND ${n} >= 0 AND ${n} < 1e15 THEN trunc(${n})::bigint::text END
  END`;
}

/** SQL for the stored form (UTF-16 big-endian, order-key.ts) of an ASCII text. */
const asciiOrderSql = (text: string): string =>
  `decode(regexp_replace(encode(convert_to(${text}, 'UTF8'), 'hex'), '(..)', '00\\1', 'g'), 'hex')`;

/** One range part's rows: `s.key_order` and `columns` of `table` from `lower` (inclusive) to `upper`, when `when` holds, at most `limit` of them in key order. */
function inRange(table: string, range: { columns: string; when: string; lower: string; upper: string; limit: number | string }): string {
  return `SELECT s.key_order${range.columns} FROM ${table} AS s
  WHERE ${range.when}s.key_order >= ${range.lower} AND s.key_order < ${range.upper} ORDER BY s.key_order LIMIT ${range.limit}`;
}

/**
 * One row of part `part` holding every key `range` reads, packed in one value (NULL key_order):
 * each key's stored form after `lower` (the prefix, which every key in the range starts with) as
 * a 4-byte big-endian length then those bytes, in key order; `size` is their count. A thread's
 * hundred keys as rows cost the client several µs each (the driver's row, a buffer and a decode
 * per key); packed, one value is parsed and the prefix is not sent a hundred times. Its limit is
 * given as a subquery: the planner then expects a tenth of the range's rows and reads the index
 * in key order (an index-only scan) rather than a bitmap scan of the heap and a sort. A pruning
 * saver's thread lets two rows go a superstep: a bitmap scan visited every row deleted since the
 * last vacuum (500 index entries for a hundred keys, 0.4 ms), where an index scan marks the dead
 * entries it meets and later scans pass them over (0.05 ms).
 */
function packedKeys(part: number, range: string, lower: string): string {
  const skip = `octet_length(${lower})`;
  return `SELECT ${part}, NULL, b.packed, NULL, NULL, NULL, b.n FROM (
  SELECT string_agg(int4send(octet_length(r.key_order) - ${skip}) || substring(r.key_order from ${skip} + 1), ''::bytea ORDER BY r.key_order) AS packed,
    count(*)::int AS n
  FROM (
  ${range}
  ) AS r
) AS b WHERE b.n > 0`;
}

/**
 * The statement. Parameters: $1 the value's stored key; $2–$4 the get link (member, stored
 * `before`, stored `after`); $5–$8 the list link (member, stored `before`, stored `after`, the
 * stored upper bound of `after` as a prefix, NULL when it has none: the bound then ends in the
 * member's last character, plus one); $9–$10 the stored bounds of the `keys` prefix, $11–$12 those
 * of the `first` prefix and $13 its count, $14–$15 those of the `keysIfAbsent` prefix, $16–$17
 * those of the `entries` prefix (NULL bounds: not read). Rows: part 0 the value with the member
 * texts; part 1 the linked key's row; part 2 the listed rows in key order; part 3 the keys under
 * the `keys` prefix, packed in one row (see packedKeys); part 4 the first rows under the `first`
 * prefix; part 5 the keys under the `keysIfAbsent` prefix, packed likewise; part 6 the keys under
 * the `entries` prefix with their versions and sizes (`size`, as `list` gives it). Parts 1–4 and 6
 * are read only when the value exists, part 5 only when it does not. Parts 2 and 6 hold at most
 * one row more than LINKED_READ_LIMITS allows, parts 3 and 5 at most one key more. Each range
 * part reads its bounds as values (a scalar subquery): its index scan then starts at the lower
 * bound in key order, where a join would scan the index from its start under a LIMIT. A bound
 * given as a parameter is read through a scalar subquery too (and so is `first`'s count): the
 * server plans a named statement for the values of its first five calls, and keeps a plan for
 * any values only if that costs no more. Given as values, a part not asked for (NULL bounds)
 * plans as empty, so every call's own plan was cheaper and the server planned the statement
 * again at every call (0.7–0.9 ms a call, more than the read itself); through a subquery no
 * call's plan knows the bounds, and the one plan is kept.
 */
export function linkedReadSql(table: string): string {
  const L = LINKED_READ_LIMITS;
  const present = 'EXISTS (SELECT 1 FROM p) AND ';
  const inc = (b: string): string => `set_byte(${b}, octet_length(${b}) - 1, get_byte(${b}, octet_length(${b}) - 1) + 1)`;
  return `WITH t AS (
  SELECT value, version,
    CASE WHEN octet_length(value) BETWEEN 2 AND ${PARSED_MAX_BYTES} AND get_byte(value, 0) = 123
      AND encode(value, 'escape') !~ '${NOT_ASCII}' THEN convert_from(value, 'UTF8') END AS text
  FROM ${table} WHERE key_order = $1
), p AS (
  SELECT value, version, CASE WHEN text !~ '${OTHER_ESCAPE}' THEN text::jsonb END AS doc FROM t
), m AS (
  SELECT ${memberSql('$2')} AS g, ${memberSql('$5')} AS l FROM p
), k AS (
  SELECT g, l, $3::bytea || ${asciiOrderSql('g')} || $4::bytea AS got,
    $6::bytea || ${asciiOrderSql('l')} || $7::bytea AS lower,
    CASE WHEN $8::bytea IS NULL THEN $6::bytea || ${inc(asciiOrderSql('l'))} ELSE $6::bytea || ${asciiOrderSql('l')} || $8::bytea END AS upper
  FROM m
)
SELECT 0 AS part, NULL::bytea AS key_order, p.value, p.version::text AS version, m.g, m.l, NULL::int AS size FROM p, m
UNION ALL
SELECT 1, s.key_order, s.value, s.version::text, NULL, NULL, NULL FROM ${table} AS s, k WHERE k.g IS NOT NULL AND s.key_order = k.got
UNION ALL
SELECT 2, b.key_order, b.value, b.version::text, NULL, NULL, NULL FROM (
  ${inRange(table, { columns: ', s.value, s.version', when: '', lower: '(SELECT lower FROM k)', upper: '(SELECT upper FROM k)', limit: L.listed + 1 })}
) AS b
UNION ALL
${packedKeys(3, inRange(table, { columns: '', when: present, lower: '(SELECT $9::bytea)', upper: '(SELECT $10::bytea)', limit: `(SELECT ${L.keys + 1})` }), '$9::bytea')}
UNION ALL
SELECT 4, f.key_order, f.value, f.version::text, NULL, NULL, NULL FROM (
  SELECT b.key_order, b.value, b.version FROM (
  ${inRange(table, { columns: ', s.value, s.version', when: present, lower: '(SELECT $11::bytea)', upper: '(SELECT $12::bytea)', limit: L.first })}
  ) AS b ORDER BY b.key_order LIMIT (SELECT $13::int)
) AS f
UNION ALL
${packedKeys(5, inRange(table, { columns: '', when: 'NOT EXISTS (SELECT 1 FROM t) AND ', lower: '(SELECT $14::bytea)', upper: '(SELECT $15::bytea)', limit: `(SELECT ${L.keys + 1})` }), '$14::bytea')}
UNION ALL
SELECT 6, b.key_order, NULL, b.version::text, NULL, NULL, b.size FROM (
  ${inRange(table, { columns: ', s.version, octet_length(s.value) AS size', when: present, lower: '(SELECT $16::bytea)', upper: '(SELECT $17::bytea)', limit: L.entries + 1 })}
) AS b
ORDER BY part, key_order`;
}
