import { formatDuration } from '../../contract/human-duration.js';
export { formatDuration };
/** Tiny DOM helpers: the viewer has no framework (see the CHANGELOG for why). */
type Child = Node | string | number | null | undefined | false;

/** Creates an element; `attrs` keys starting with `on` add listeners, others set attributes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'text') el.textContent = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, ...children);
  return el;
}

/** Appends children, skipping empty ones; text is always set as text, never parsed as HTML. */
export function append(el: Element, ...children: Child[]): void {
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
}

export function clear(el: Element): void {
  while (el.firstChild) el.firstChild.remove();
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** `2026-11-23 20:45:49Z` from an RFC 3339 time. */
export function shortTime(iso: string | null): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  return Number.isNaN(t)
    ? iso
    : new Date(t)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}

/**
 * How long ago `iso` was, from `now`: `3 min ago`, or for a time ahead of this clock
 * `in 44 h 27 min (ahead of this clock)` — never a future time read as the past.
 */
export function relativeTime(iso: string, now: number): string {
  const d = now - Date.parse(iso);
  if (Number.isNaN(d)) return '';
  return d < 0 ? `in ${formatDuration(-d)} (ahead of this clock)` : `${formatDuration(d)} ago`;
}

/** Words for a retention decision count: what happens to the snapshots, so "0 keep · 25 compress" cannot read as "nothing kept". */
export const RETENTION_WORDS: Readonly<Record<string, string>> = {
  keep: 'kept as they are',
  compress: 'kept, gzipped',
  summarize: 'summarized',
  delete: 'deleted',
};
