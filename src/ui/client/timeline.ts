import { formatBytes, formatDuration, h, shortTime } from './dom.js';
import { brushWindow, clampWindow, isWhole, panWindow, timeToX, zoomWindow, type TimeWindow } from './time-window.js';

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

/** What the time axis draws from, and the range it shows (state of one axis, changed by its handlers only). */
interface AxisState {
  readonly entries: readonly TimelineEntry[];
  readonly times: readonly number[];
  readonly gaps: ReadonlySet<number>;
  readonly decisions: ReadonlyMap<number, Decision>;
  readonly full: TimeWindow;
  window: TimeWindow;
  /** The overview pixels a brush drag spans, while one is under way. */
  brush: { from: number; to: number } | null;
  readonly overview: HTMLCanvasElement;
  readonly detail: HTMLCanvasElement;
  readonly status: HTMLElement;
  readonly onWindow: ((w: TimeWindow) => void) | undefined;
}

const PAD = 8;

function markColor(s: AxisState, i: number): string {
  const e = s.entries[i]!;
  const d = e.sequence !== null ? s.decisions.get(e.sequence) : undefined;
  return e.error ? '#c62828' : d ? ACTION_COLOR[d.action] : e.heartbeat ? '#9e9e9e' : '#37474f';
}

/** The detailed axis: only the window's snapshots; `data-marks` and `data-columns` say how many and on how many pixel columns. */
function drawDetail(s: AxisState): void {
  const canvas = s.detail;
  const width = (canvas.width = Math.max(200, canvas.clientWidth || 800));
  const g = canvas.getContext('2d');
  if (!g) return;
  g.clearRect(0, 0, width, canvas.height);
  g.fillStyle = '#f3f3f3';
  g.fillRect(0, 40, width, 2);
  const x = (t: number): number => timeToX(s.window, width, PAD, t);
  for (const i of s.gaps) {
    const a = Math.max(0, x(s.times[i - 1]!));
    const b = Math.min(width, x(s.times[i]!));
    if (b <= a) continue;
    g.fillStyle = 'rgba(198,40,40,0.15)';
    g.fillRect(a, 4, b - a, 36);
  }
  const columns = new Set<number>();
  let marks = 0;
  // Wider marks once zoomed in, where they stand apart; one pixel on the whole run, where they crowd.
  const markWidth = isWhole(s.full, s.window) ? 1 : 2;
  s.times.forEach((t, i) => {
    if (Number.isNaN(t) || t < s.window.from || t > s.window.to) return;
    const px = Math.round(x(t));
    marks++;
    columns.add(px);
    g.fillStyle = markColor(s, i);
    const tall = s.entries[i]!.heartbeat ? 10 : 28;
    g.fillRect(px, 40 - tall, markWidth, tall);
  });
  canvas.dataset.from = String(s.window.from);
  canvas.dataset.to = String(s.window.to);
  canvas.dataset.marks = String(marks);
  canvas.dataset.columns = String(columns.size);
  g.fillStyle = '#555';
  g.font = '11px sans-serif';
  g.fillText(shortTime(new Date(s.window.from).toISOString()), 4, 54);
  const end = shortTime(new Date(s.window.to).toISOString());
  g.fillText(end, width - g.measureText(end).width - 4, 54);
  const whole = isWhole(s.full, s.window);
  s.status.textContent = `${whole ? 'whole run' : `${shortTime(new Date(s.window.from).toISOString())} – ${end}`}: ${marks} of ${s.entries.length} snapshots`;
  canvas.setAttribute('aria-label', `time axis of ${marks} snapshots; the list below has the same content`);
}

/** The overview strip: the whole run, the window shaded, and the brush being dragged. */
function drawOverview(s: AxisState): void {
  const canvas = s.overview;
  const width = (canvas.width = Math.max(200, canvas.clientWidth || 800));
  const g = canvas.getContext('2d');
  if (!g) return;
  g.clearRect(0, 0, width, canvas.height);
  g.fillStyle = '#9aa4ad';
  for (const t of s.times) if (!Number.isNaN(t)) g.fillRect(Math.round(timeToX(s.full, width, PAD, t)), 6, 1, 16);
  const [a, b] = s.brush
    ? [Math.min(s.brush.from, s.brush.to), Math.max(s.brush.from, s.brush.to)]
    : [timeToX(s.full, width, PAD, s.window.from), timeToX(s.full, width, PAD, s.window.to)];
  g.fillStyle = 'rgba(11,87,208,0.18)';
  g.fillRect(a, 0, Math.max(2, b - a), canvas.height);
  g.strokeStyle = '#0b57d0';
  g.strokeRect(a + 0.5, 0.5, Math.max(2, b - a) - 1, canvas.height - 1);
}

function setWindow(s: AxisState, w: TimeWindow): void {
  s.window = clampWindow(s.full, w);
  s.onWindow?.(s.window);
  drawDetail(s);
  drawOverview(s);
}

/** Brushing the overview: a drag selects a range, a click centres the window there. */
function listenOverview(s: AxisState): void {
  const c = s.overview;
  c.addEventListener('pointerdown', (ev) => {
    c.setPointerCapture(ev.pointerId);
    s.brush = { from: ev.offsetX, to: ev.offsetX };
  });
  c.addEventListener('pointermove', (ev) => {
    if (!s.brush) return;
    s.brush.to = ev.offsetX;
    drawOverview(s);
  });
  c.addEventListener('pointerup', (ev) => {
    const b = s.brush;
    s.brush = null;
    if (!b) return;
    if (Math.abs(ev.offsetX - b.from) >= 3) return setWindow(s, brushWindow(s.full, c.width, PAD, b.from, ev.offsetX));
    const at = brushWindow(s.full, c.width, PAD, ev.offsetX, ev.offsetX).from;
    const half = (s.window.to - s.window.from) / 2;
    setWindow(s, { from: at - half, to: at + half });
  });
}

/** The detailed axis: the wheel zooms about the pointer, keys zoom and pan, a click picks the nearest snapshot. */
function listenDetail(s: AxisState, onPick: (index: number) => void): void {
  const c = s.detail;
  c.addEventListener(
    'wheel',
    (ev) => {
      ev.preventDefault();
      const at = s.window.from + ((ev.offsetX - PAD) / Math.max(1, c.width - 2 * PAD)) * (s.window.to - s.window.from);
      setWindow(s, zoomWindow(s.full, s.window, ev.deltaY < 0 ? 0.8 : 1.25, at));
    },
    { passive: false },
  );
  c.addEventListener('keydown', (ev) => {
    const act = axisKeys(s)[ev.key];
    if (!act) return;
    ev.preventDefault();
    setWindow(s, act());
  });
  c.addEventListener('click', (ev) => {
    let best = -1;
    let bestDist = Infinity;
    s.times.forEach((t, i) => {
      if (Number.isNaN(t) || t < s.window.from || t > s.window.to) return;
      const dist = Math.abs(timeToX(s.window, c.width, PAD, t) - ev.offsetX);
      if (dist < bestDist) [best, bestDist] = [i, dist];
    });
    if (best >= 0) onPick(best);
  });
}

function axisKeys(s: AxisState): Record<string, () => TimeWindow> {
  return {
    '+': () => zoomWindow(s.full, s.window, 0.5),
    '=': () => zoomWindow(s.full, s.window, 0.5),
    '-': () => zoomWindow(s.full, s.window, 2),
    '0': () => s.full,
    ArrowLeft: () => panWindow(s.full, s.window, -0.25),
    ArrowRight: () => panWindow(s.full, s.window, 0.25),
  };
}

function zoomButtons(s: AxisState): HTMLElement {
  const button = (id: string, label: string, text: string, next: () => TimeWindow): HTMLElement =>
    h('button', { id, type: 'button', 'aria-label': label, title: label, onclick: () => setWindow(s, next()) }, text);
  return h(
    'div',
    { class: 'zoom-bar' },
    button('zoom-in', 'Zoom in (+)', '+', () => zoomWindow(s.full, s.window, 0.5)),
    button('zoom-out', 'Zoom out (−)', '−', () => zoomWindow(s.full, s.window, 2)),
    button('pan-earlier', 'Earlier (←)', '←', () => panWindow(s.full, s.window, -0.5)),
    button('pan-later', 'Later (→)', '→', () => panWindow(s.full, s.window, 0.5)),
    button('zoom-reset', 'Show the whole run (0)', 'Whole run', () => s.full),
    s.status,
  );
}

/**
 * Draws the run's snapshots on a time axis with an overview strip above it: brushing the
 * strip, the wheel, the zoom buttons or keys choose the range the axis shows, so a run of
 * thousands of snapshots can be narrowed until they stand apart. Clicking picks the nearest one.
 */
export function timeAxis(
  entries: readonly TimelineEntry[],
  gaps: ReadonlySet<number>,
  decisions: ReadonlyMap<number, Decision>,
  onPick: (index: number) => void,
  view: { readonly window?: TimeWindow | undefined; readonly onWindow?: (w: TimeWindow) => void } = {},
): HTMLElement {
  const times = entries.map((e) => (e.createdAt ? Date.parse(e.createdAt) : Number.NaN));
  const valid = times.filter((t) => !Number.isNaN(t));
  const full = valid.length ? { from: Math.min(...valid), to: Math.max(...valid) } : { from: 0, to: 0 };
  const s: AxisState = {
    entries,
    times,
    gaps,
    decisions,
    full,
    window: view.window ? clampWindow(full, view.window) : full,
    brush: null,
    overview: h('canvas', { id: 'overview', height: 28, 'aria-hidden': 'true' }),
    detail: h('canvas', {
      id: 'axis',
      height: 56,
      tabindex: 0,
      role: 'img',
      'aria-roledescription': 'zoomable time axis',
      'aria-keyshortcuts': '+ - 0 ArrowLeft ArrowRight',
    }),
    status: h('span', { id: 'zoom-range', class: 'muted', 'aria-live': 'polite' }),
    onWindow: view.onWindow,
  };
  listenOverview(s);
  listenDetail(s, onPick);
  const draw = (): void => {
    if (valid.length === 0) return;
    drawDetail(s);
    drawOverview(s);
  };
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return h('div', { class: 'axis' }, zoomButtons(s), s.overview, s.detail);
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
