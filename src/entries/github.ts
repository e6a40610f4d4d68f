/**
 * `savepoint/github`: checkpoints in a GitHub repository, through the REST API and the
 * platform `fetch` (Node, browsers, Deno, Bun, edge runtimes). No `node:` imports.
 *
 * @module savepoint/github
 */
export * from '../storage/github/index.js';
