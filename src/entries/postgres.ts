/**
 * `savepoint/postgres`: checkpoints in a PostgreSQL table, shared by every process and machine
 * that reaches the database. Node-only; `pg` is an optional peer dependency, loaded only when
 * the store makes its own pool from a connection string.
 *
 * @module savepoint/postgres
 */
export * from '../storage/postgres/index.js';
