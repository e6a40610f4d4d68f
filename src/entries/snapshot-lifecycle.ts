/**
 * `savepoint/snapshot-lifecycle` — the snapshot-lifecycle profile, after snapshot-lifecycle.md: JSON snapshots per run (`latest.json` + immutable `history/`), coalescing, 50-per-run retention, gzip after 24 h.
 * Everything specific to that spec lives here: its document schema and codec, layout,
 * triggers and their helpers, resume rule, retention defaults and import of documents
 * written by other tools.
 *
 * @module savepoint/snapshot-lifecycle
 */
export * from '../profiles/snapshot-lifecycle/index.js';
