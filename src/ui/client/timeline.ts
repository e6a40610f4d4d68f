import { formatBytes, formatDuration, h, shortTime } from './dom.js';

import type { TimelineEntry as ServerEntry } from '../timeline.js';

/** One snapshot as the server's timeline lists it (types only: no server code reaches the page). */
export interface TimelineEntry extends ServerEntry {
  /** Known from the listing only; its file is still being read. */
  readonly pending?: true;
}

/** A retention decision drawn on the timeline. */
export interface Decision {
  readonly action: 'keep' | 'compress' | 'summarize' | 'delete';
  readonly reasons: readonly string[];
}

const ROW = 28;
const ACTION_LABEL: Record<Decision['action'], string> = {
  keep: 'kept',
  compress: 'compressed',
  summarize: 'summarized',
  delete: 'deleted',
};
const ACTION_COLOR: Record<Decision['action'], string> = { keep: '#2e7d32', compress: '#1565c0', summarize: '#8e24aa', delete: '#c62828' };

/**
 * Which snapshots follow a gap: an interval longer than three heartbeat periods (when the
 * profile beats) or ten times the run's median interval, and at least a minute.
 */
export function gapsBefore(entries: readonly TimelineEntry[], heartbeatMs: number | null): Set<number> {
  const times = entries.map((e) => (e.createdAt ? Date.parse(e.createdAt) : Number.NaN));
  const intervals: number[] = [];
  for (let i = 1; i < times.length; i++)
    if (!Number.isNaN(times[i]!) && !Number.isNaN(times[i - 1]!)) intervals.push(times[i]! - times[i - 1]!);
  const sorted = [...intervals].sort((a, b) => a - b);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)]! : 0;
  const threshold = Math.max(60_000, heartbeatMs ? 3 * heartbeatMs : 10 * median);
  const gaps = new Set<number>();
  for (let i = 1; i < times.length; i++) if (times[i]! - times[i - 1]! > threshold) gaps.add(i);
  return gaps;
}

/** Draws every snapshot on a time axis; clicking picks the nearest one. */
export function timeAxis(
  entries: readonly TimelineEntry[],
  gaps: ReadonlySet<number>,
  decisions: ReadonlyMap<number, Decision>,
  onPick: (index: number) => void,
): HTMLCanvasElement {
  const canvas = h('canvas', {
    id: 'axis',
    height: 56,
    'aria-label': `time axis of ${entries.length} snapshots; the list below has the same content`,
    role: 'img',
  });
  const times = entries.map((e) => (e.createdAt ? Date.parse(e.createdAt) : Number.NaN));
  const valid = times.filter((t) => !Number.isNaN(t));
  const t0 = Math.min(...valid);
  const t1 = Math.max(...valid);
  const x = (t: number, width: number): number => 8 + ((t - t0) / Math.max(1, t1 - t0)) * (width - 16);
  const draw = (): void => {
    const width = (canvas.width = Math.max(200, canvas.clientWidth || 800));
    const g = canvas.getContext('2d');
    if (!g || valid.length === 0) return;
    g.clearRect(0, 0, width, canvas.height);
    g.fillStyle = '#f3f3f3';
    g.fillRect(0, 40, width, 2);
    for (const i of gaps) {
      const a = x(times[i - 1]!, width);
      g.fillStyle = 'rgba(198,40,40,0.15)';
      g.fillRect(a, 4, x(times[i]!, width) - a, 36);
    }
    entries.forEach((e, i) => {
      if (Number.isNaN(times[i]!)) return;
      const d = e.sequence !== null ? decisions.get(e.sequence) : undefined;
      g.fillStyle = e.error ? '#c62828' : d ? ACTION_COLOR[d.action] : e.heartbeat ? '#9e9e9e' : '#37474f';
      const tall = e.heartbeat ? 10 : 28;
      g.fillRect(Math.round(x(times[i]!, width)), 40 - tall, 1, tall);
    });
    g.fillStyle = '#555';
    g.font = '11px sans-serif';
    g.fillText(shortTime(new Date(t0).toISOString()), 4, 54);
    const end = shortTime(new Date(t1).toISOString());
    g.fillText(end, width - g.measureText(end).width - 4, 54);
  };
  canvas.addEventListener('click', (ev) => {
    const px = ev.offsetX;
    let best = -1;
    let bestDist = Infinity;
    times.forEach((t, i) => {
      if (Number.isNaN(t)) return;
      const dist = Math.abs(x(t, canvas.width) - px);
      if (dist < bestDist) [best, bestDist] = [i, dist];
    });
    if (best >= 0) onPick(best);
  });
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return canvas;
}

function rowContent(e: TimelineEntry, gap: boolean, decision: Decision | undefined, previous: TimelineEntry | undefined): HTMLElement[] {
  const since = previous?.createdAt && e.createdAt ? Date.parse(e.createdAt) - Date.parse(previous.createdAt) : undefined;
  return [
    h('span', { class: 'c-seq' }, e.sequence ?? '?'),
    h(
      'span',
      { class: 'c-time' },
      shortTime(e.createdAt),
      gap && since !== undefined ? h('span', { class: 'gap', title: 'gap before this snapshot' }, ` ⟵ gap ${formatDuration(since)}`) : null,
    ),
    h(
      'span',
      { class: 'c-trigger' },
      e.error ? h('span', { class: 'bad' }, e.error.reasonCode) : e.pending ? h('span', { class: 'muted' }, '…') : e.source,
      e.heartbeat ? h('span', { class: 'tag hb' }, 'heartbeat') : null,
      e.coalesced.length ? h('span', { class: 'coalesced' }, ` +${e.coalesced.join(', ')}`) : null,
    ),
    h('span', { class: 'c-status' }, e.error ? 'unreadable' : e.pending ? '…' : e.status),
    h('span', { class: 'c-size' }, formatBytes(e.size), e.compressed ? ' gz' : '', e.batched ? ' batch' : ''),
    h(
      'span',
      { class: 'c-retention' },
      decision
        ? h(
            'span',
            { class: `tag act-${decision.action}`, title: decision.reasons.join(', ') || 'no rule keeps it' },
            ACTION_LABEL[decision.action],
          )
        : null,
      decision?.reasons.length ? h('span', { class: 'reasons' }, ` ${decision.reasons.join(', ')}`) : null,
    ),
  ];
}

/** Row `i` of the list, placed at its offset (the list adds the click handler). */
function timelineRow(
  entries: readonly TimelineEntry[],
  i: number,
  isSelected: boolean,
  gaps: ReadonlySet<number>,
  decisions: ReadonlyMap<number, Decision>,
): HTMLElement {
  const e = entries[i]!;
  const decision = e.sequence !== null ? decisions.get(e.sequence) : undefined;
  const row = h(
    'div',
    {
      class: `row${isSelected ? ' selected' : ''}${gaps.has(i) ? ' after-gap' : ''}${e.heartbeat ? ' heartbeat' : ''}`,
      role: 'option',
      id: `row-${i}`,
      'data-seq': e.sequence ?? '',
      'aria-selected': isSelected ? 'true' : 'false',
    },
    ...rowContent(e, gaps.has(i), decision, entries[i - 1]),
  );
  row.style.top = `${i * ROW}px`;
  return row;
}

/** A virtualized, keyboard-driven list of a run's snapshots: only the visible rows exist in the DOM. */
export function snapshotList(
  entries: readonly TimelineEntry[],
  gaps: ReadonlySet<number>,
  decisions: ReadonlyMap<number, Decision>,
  onOpen: (e: TimelineEntry) => void,
  initial?: number,
  onSelect?: (index: number) => void,
): { element: HTMLElement; select(index: number): void } {
  const inner = h('div', { class: 'inner' });
  // Through the CSSOM, not a style attribute: the page's CSP allows no inline styles.
  inner.style.height = `${entries.length * ROW}px`;
  const list = h(
    'div',
    {
      id: 'timeline',
      class: 'vlist',
      role: 'listbox',
      tabindex: 0,
      'aria-label': `${entries.length} snapshots`,
      'aria-rowcount': entries.length,
    },
    inner,
  );
  let selected = initial ?? entries.length - 1;
  let frame = 0;
  const render = (): void => {
    frame = 0;
    const first = Math.max(0, Math.floor(list.scrollTop / ROW) - 10);
    const last = Math.min(entries.length, Math.ceil((list.scrollTop + (list.clientHeight || 600)) / ROW) + 10);
    inner.replaceChildren(
      ...entries.slice(first, last).map((e, j) => {
        const i = first + j;
        const row = timelineRow(entries, i, i === selected, gaps, decisions);
        row.addEventListener('click', () => {
          select(i);
          onOpen(e);
        });
        return row;
      }),
    );
    list.setAttribute('aria-activedescendant', `row-${selected}`);
  };
  const schedule = (): void => {
    if (!frame) frame = requestAnimationFrame(render);
  };
  const select = (index: number): void => {
    selected = Math.max(0, Math.min(entries.length - 1, index));
    onSelect?.(selected);
    const top = selected * ROW;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (top + ROW > list.scrollTop + list.clientHeight) list.scrollTop = top + ROW - list.clientHeight;
    render();
  };
  list.addEventListener('scroll', schedule);
  list.addEventListener('keydown', (ev) => {
    const page = Math.max(1, Math.floor(list.clientHeight / ROW) - 1);
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: -Infinity, End: Infinity };
    if (ev.key in moves) {
      ev.preventDefault();
      const delta = moves[ev.key]!;
      select(delta === -Infinity ? 0 : delta === Infinity ? entries.length - 1 : selected + delta);
    } else if (ev.key === 'Enter') {
      const entry = entries[selected];
      if (!entry) return;
      ev.preventDefault();
      onOpen(entry);
    }
  });
  requestAnimationFrame(() => select(selected));
  return { element: list, select };
}
