/**
 * `savepoint/phased-workflow` — the phased-workflow profile, after phased-workflow-github.md: phased workflow checkpoints (`cp_NNN_trigger.json`, `latest.json`, `index.json`), resume rules, cross-run retention tiers.
 * Everything specific to that spec lives here: its document schema and codec, layout,
 * triggers and their helpers, resume rule, retention defaults and import of documents
 * written by other tools.
 *
 * @module savepoint/phased-workflow
 */
export * from '../profiles/phased-workflow/index.js';
