/**
 * `savepoint/handoff-markdown` — the `handoffMarkdown` profile (handoff-markdown.md):
 * Markdown hand-off documents with front matter, carried forward from checkpoint to
 * checkpoint and compressed under a token budget.
 *
 * Needs the optional peer dependency `yaml` (`npm install yaml`) for the front matter.
 *
 * @module savepoint/handoff-markdown
 */
export * from '../profiles/handoff-markdown/index.js';
