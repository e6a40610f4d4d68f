/**
 * `savepoint/testing` — test helpers for savepoint users and adapter authors: the storage
 * conformance suite, a fault-injecting storage wrapper, a hand-moved clock and a GitHub API
 * emulator.
 *
 * @module savepoint/testing
 */
export * from '../testing/index.js';
