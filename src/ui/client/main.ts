/**
 * The savepoint viewer: runs → a run's timeline → a snapshot (tree and diff), with verify,
 * the resume plan and a retention dry run. Hash routes (`#/run/<id>`, `#/run/<id>/snap/<seq>`)
 * keep every view addressable and the back button working.
 */
import { ApiFailure, enc, get, post } from './api.js';
import { append, clear, formatBytes, formatDuration, h, relativeTime, RETENTION_WORDS, shortTime } from './dom.js';
import type { TimeWindow } from './time-window.js';
import { snapshotList, gapsBefore, timeAxis, type Decision, type TimelineEntry } from './timeline.js';
import { jsonTree } from './tree.js';
import type { RetentionView } from '../retention-view.js';
import type { RunView } from '../runs-view.js';
import type { SnapshotChange as Change } from '../../runs/diff.js';

interface Info {
  readonly profile: string;
  readonly store: string;
  readonly allowPrune: boolean;
  readonly heartbeatMs: number | null;
}

const main = document.getElementById('main')!;
const crumbs = document.getElementById('crumbs')!;
let info: Info = { profile: '', store: '', allowPrune: false, heartbeatMs: null };

function showError(where: HTMLElement, err: unknown): void {
  const e = err instanceof ApiFailure ? err.error : { reasonCode: 'ui_error', message: String(err) };
  append(where, h('p', { class: 'error', role: 'alert' }, h('code', {}, e.reasonCode), ' ', e.message));
}

function setCrumbs(...parts: [string, string | null][]): void {
  clear(crumbs);
  parts.forEach(([label, href], i) => {
    if (i > 0) append(crumbs, ' / ');
    append(crumbs, href ? h('a', { href }, label) : h('span', { 'aria-current': 'page' }, label));
  });
}

function resumableCell(r: RunView): HTMLElement {
  const v = r.resumable;
  if (v.state === 'resumable')
    return h('span', { class: v.eligible ? 'ok' : 'warn', title: v.reason }, v.eligible ? `yes, at ${v.at}` : `needs a human (${v.at})`);
  if (v.state === 'finished') return h('span', { class: 'muted' }, `finished (${v.status})`);
  return h('span', { class: 'bad', title: v.error.message }, `no: ${v.error.reasonCode}`);
}

function lockCell(r: RunView): HTMLElement | string {
  if (!r.lock) return '—';
  const who = `pid ${r.lock.pid ?? '?'} on ${r.lock.hostname ?? '?'}`;
  if (!r.lock.live) return h('span', { class: 'muted' }, `${who} (lease ended)`);
  return h('span', { class: 'warn' }, `${who}, lease ends in ${formatDuration((r.lock.leaseUntil ?? Date.now()) - Date.now())}`);
}

async function runsView(): Promise<void> {
  setCrumbs([`${info.store} · ${info.profile}`, null]);
  const runs = await get<RunView[]>('runs');
  clear(main);
  if (runs.length === 0) return append(main, h('p', {}, 'This store holds no runs for the profile ', h('code', {}, info.profile), '.'));
  const now = Date.now();
  append(
    main,
    h('h1', {}, `${runs.length} run${runs.length === 1 ? '' : 's'}`),
    h(
      'table',
      { id: 'runs' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['Run', 'Status', 'Seq', 'Last activity', 'Files', 'Size', 'Lock holder', 'Resumable'].map((c) =>
            h('th', { scope: 'col' }, c),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        ...runs.map((r) =>
          h(
            'tr',
            { 'data-run': r.runId },
            h('td', {}, h('a', { href: `#/run/${enc(r.runId)}` }, r.runId)),
            h('td', { class: r.terminal ? 'muted' : '' }, r.status ?? '—'),
            h('td', { class: 'num' }, r.sequence ?? '—'),
            h(
              'td',
              { title: r.lastActivity ?? '' },
              r.lastActivity ? `${shortTime(r.lastActivity)} (${relativeTime(r.lastActivity, now)})` : '—',
            ),
            h('td', { class: 'num' }, r.files),
            h('td', { class: 'num' }, formatBytes(r.bytes)),
            h('td', {}, lockCell(r)),
            h('td', { class: 'resumable' }, resumableCell(r)),
          ),
        ),
      ),
    ),
  );
}

function panel(id: string, title: string): HTMLElement {
  return h('section', { id, class: 'panel', 'aria-label': title }, h('h2', {}, title));
}

async function verifyPanel(runId: string, into: HTMLElement): Promise<void> {
  const v = await get<{ checked: number; problems: { key: string; reasonCode: string; message: string }[] }>(`runs/${enc(runId)}/verify`);
  append(
    into,
    h(
      'p',
      { class: v.problems.length ? 'bad' : 'ok' },
      `Checked ${v.checked} file${v.checked === 1 ? '' : 's'}: ${v.problems.length} problem${v.problems.length === 1 ? '' : 's'}`,
    ),
    v.problems.length
      ? h(
          'ul',
          { class: 'findings' },
          ...v.problems.map((p) => h('li', {}, h('code', {}, p.reasonCode), ' ', h('span', { class: 'key' }, p.key), ': ', p.message)),
        )
      : null,
  );
}

async function resumePanel(runId: string, into: HTMLElement): Promise<void> {
  const r = await get<Record<string, unknown>>(`runs/${enc(runId)}/resume`);
  if (r.ok !== true) {
    const e = r.error as { reasonCode: string; message: string };
    return append(into, h('p', { class: 'bad' }, h('code', {}, e.reasonCode), ' ', e.message));
  }
  const warnings = r.warnings as { code: string; message: string }[];
  const skipped = r.skipped as { key: string; reasonCode: string; message: string; issue?: string }[];
  append(
    into,
    h(
      'dl',
      { class: 'plan' },
      ...(
        [
          ['Resume at', String(r.at)],
          ['Why', `${String(r.explanation)} (${String(r.reason)})`],
          ['Automatic', r.eligible ? 'yes' : 'no — a human decides'],
          ['From snapshot', `#${String(r.sequence)} (${String(r.status)}), ${formatDuration(Number(r.ageMs))} old`],
          ['Next sequence', String(r.nextSequence)],
        ] as const
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    warnings.length ? h('ul', { class: 'warnings' }, ...warnings.map((w) => h('li', {}, h('code', {}, w.code), ' ', w.message))) : null,
    skipped.length
      ? h(
          'ul',
          { class: 'findings' },
          ...skipped.map((s) =>
            h('li', {}, 'skipped ', h('span', { class: 'key' }, s.key), ': ', s.issue ?? '', ' ', h('code', {}, s.reasonCode)),
          ),
        )
      : null,
  );
}

function confirmApply(plan: RetentionView, into: HTMLElement): void {
  const input = h('input', { id: 'confirm-text', 'aria-label': 'type prune to confirm', autocomplete: 'off' });
  const status = h('p', { role: 'status' });
  const go = h('button', { id: 'confirm-apply', disabled: true }, `Delete / compress (${plan.operations} operations)`);
  const dialog = h(
    'dialog',
    { id: 'confirm' },
    h(
      'p',
      {},
      `Apply policy "${plan.policy}" to the whole store: ${plan.operations} operations. Type `,
      h('code', {}, 'prune'),
      ' to confirm.',
    ),
    input,
    ' ',
    go,
    ' ',
    h('button', { onclick: () => dialog.close() }, 'Cancel'),
    status,
  );
  input.addEventListener('input', () => (go.disabled = input.value !== 'prune'));
  go.addEventListener('click', async () => {
    go.disabled = true;
    try {
      const r = await post<{ applied: number }>('retention/apply', { digest: plan.digest, confirm: true });
      status.textContent = `Applied ${r.applied} operations.`;
      setTimeout(() => location.reload(), 800);
    } catch (err) {
      showError(status, err);
    }
  });
  append(into, dialog);
  dialog.showModal();
  input.focus();
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The server leaves empty members out of timeline entries; put them back. */
function expandEntry(e: Partial<TimelineEntry>): TimelineEntry {
  return {
    key: '',
    sequence: null,
    id: null,
    createdAt: null,
    source: null,
    status: null,
    size: 0,
    compressed: false,
    batched: false,
    heartbeat: false,
    error: null,
    ...e,
    coalesced: e.coalesced ?? [],
  };
}

/** A run's page as it is drawn: its timeline entries so far, and the boxes they are drawn in. */
interface RunPage {
  readonly runId: string;
  entries: TimelineEntry[];
  /** Indexes of the entries that follow a gap (an unusually long silence before them). */
  gaps: Set<number>;
  /** Retention decisions by sequence, once a dry run was shown. */
  readonly decisions: Map<number, Decision>;
  /** Index of the selected timeline row. */
  selected: number | undefined;
  readonly summary: HTMLElement;
  readonly listBox: HTMLElement;
  readonly axisBox: HTMLElement;
  /** The time range the axis shows, kept when the timeline is drawn again; the whole run when unset. */
  window: TimeWindow | undefined;
  readonly panels: HTMLElement;
}

function summarizeRun(page: RunPage, complete: boolean): void {
  const { entries, gaps } = page;
  page.summary.textContent = complete
    ? [plural(entries.length, 'snapshot'), plural(entries.filter((e) => e.heartbeat).length, 'heartbeat'), plural(gaps.size, 'gap')].join(
        ', ',
      )
    : `${entries.length} snapshots (reading their files…)`;
}

function drawTimeline(page: RunPage): void {
  const open = (e: TimelineEntry): void => {
    if (e.sequence !== null && !e.error) location.hash = `#/run/${enc(page.runId)}/snap/${e.sequence}`;
  };
  const list = snapshotList(page.entries, page.gaps, page.decisions, open, page.selected, (i) => (page.selected = i));
  page.axisBox.replaceChildren(
    timeAxis(page.entries, page.gaps, page.decisions, (i) => list.select(i), {
      window: page.window,
      onWindow: (w) => {
        page.window = w;
        // The list follows the axis: a selection outside the new range moves to its first snapshot.
        const first = firstInWindow(page, w);
        if (first !== undefined) list.select(first);
      },
    }),
  );
  page.listBox.replaceChildren(
    h(
      'div',
      { class: 'row head', 'aria-hidden': 'true' },
      ...['Seq', 'Created', 'Trigger', 'Status', 'Size', 'Retention'].map((c) => h('span', {}, c)),
    ),
    list.element,
  );
}

/** The index of the range's first snapshot, when the selected one lies outside the range. */
function firstInWindow(page: RunPage, w: TimeWindow): number | undefined {
  const time = (i: number | undefined): number => {
    const at = i === undefined ? null : page.entries[i]?.createdAt;
    return at ? Date.parse(at) : Number.NaN;
  };
  const selected = time(page.selected);
  if (selected >= w.from && selected <= w.to) return undefined;
  const first = page.entries.findIndex((_, i) => time(i) >= w.from && time(i) <= w.to);
  return first >= 0 ? first : undefined;
}

/** A button that opens a panel (filled by `fill`) above the timeline, or closes it if open. */
function panelToggle(page: RunPage, id: string, title: string, fill: (into: HTMLElement) => Promise<void>): HTMLElement {
  return h(
    'button',
    {
      id: `show-${id}`,
      onclick: async () => {
        const existing = document.getElementById(id);
        if (existing) return existing.remove();
        const p = panel(id, title);
        page.panels.prepend(p);
        try {
          await fill(p);
        } catch (err) {
          showError(p, err);
        }
      },
    },
    title,
  );
}

/** The retention dry run of the run: its decisions marked on the timeline, its counts and rules in the panel. */
async function retentionPanel(page: RunPage, into: HTMLElement): Promise<void> {
  const plan = await get<RetentionView>(`retention?run=${enc(page.runId)}`);
  page.decisions.clear();
  for (const d of plan.decisions) page.decisions.set(d.sequence, { action: d.action, reasons: d.reasons });
  drawTimeline(page);
  const counts = plan.runs.find((r) => r.runId === page.runId)?.counts ?? {};
  append(
    into,
    h(
      'p',
      {},
      `Policy "${plan.policy}": `,
      ...Object.entries(counts)
        .filter(([, v]) => Number(v) > 0)
        .map(([k, v]) => h('span', { class: `tag act-${k}` }, `${v} ${RETENTION_WORDS[k] ?? k}`)),
    ),
    h('ul', { class: 'rules' }, ...plan.rules.map((r) => h('li', {}, r))),
    info.allowPrune
      ? h('button', { id: 'apply-retention', class: 'danger', onclick: () => confirmApply(plan, into) }, 'Apply…')
      : h('p', { class: 'muted' }, 'Read-only viewer: start it with --allow-prune to apply.'),
  );
}

async function runView(runId: string): Promise<void> {
  setCrumbs(['runs', '#/'], [runId, null]);
  // A long run paints from the listing at once; its files' details follow.
  const quick = await get<{ complete: boolean; snapshots: Partial<TimelineEntry>[] }>(`runs/${enc(runId)}/timeline?quick=1`);
  const entries = quick.snapshots.map(expandEntry);
  const page: RunPage = {
    runId,
    entries,
    gaps: gapsBefore(entries, info.heartbeatMs),
    decisions: new Map<number, Decision>(),
    selected: undefined,
    summary: h('p', { class: 'muted', id: 'run-summary' }),
    listBox: h('div', { class: 'list-box' }),
    axisBox: h('div', { class: 'axis-box' }),
    window: undefined,
    panels: h('div', { class: 'panels' }),
  };
  clear(main);
  append(
    main,
    h('h1', {}, runId),
    page.summary,
    h(
      'div',
      { class: 'actions' },
      panelToggle(page, 'verify', 'Verify', (p) => verifyPanel(runId, p)),
      ' ',
      panelToggle(page, 'resume', 'Resume plan', (p) => resumePanel(runId, p)),
      ' ',
      panelToggle(page, 'retention', 'Retention dry run', (p) => retentionPanel(page, p)),
    ),
    page.panels,
    page.axisBox,
    page.listBox,
  );
  summarizeRun(page, quick.complete);
  drawTimeline(page);
  document.getElementById('timeline')?.focus();
  if (!quick.complete) await completeRunView(page);
}

/** Redraws the run's page with the details of every file, unless the user moved on meanwhile. */
async function completeRunView(page: RunPage): Promise<void> {
  const fullTimeline = await get<{ snapshots: Partial<TimelineEntry>[] }>(`runs/${enc(page.runId)}/timeline`);
  if (!main.contains(page.summary)) return; // the user moved on
  const hadFocus = document.activeElement?.id === 'timeline';
  page.entries = fullTimeline.snapshots.map(expandEntry);
  page.gaps = gapsBefore(page.entries, info.heartbeatMs);
  summarizeRun(page, true);
  drawTimeline(page);
  if (hadFocus) document.getElementById('timeline')?.focus();
}

async function snapshotView(runId: string, ref: string): Promise<void> {
  setCrumbs(['runs', '#/'], [runId, `#/run/${enc(runId)}`], [`#${ref}`, null]);
  const snapshot = await get<Record<string, unknown>>(`runs/${enc(runId)}/snapshots/${enc(ref)}`);
  clear(main);
  const seq = Number(snapshot.sequence);
  const against = h('input', {
    id: 'diff-against',
    inputmode: 'numeric',
    size: 8,
    value: seq > 1 ? String(seq - 1) : '',
    'aria-label': 'sequence or id to compare with',
  });
  const result = h('div', { id: 'diff', 'aria-live': 'polite' });
  const runDiff = async (): Promise<void> => {
    clear(result);
    try {
      const d = await get<{ a: number; b: number; changes: Change[]; envelope?: Change[] }>(
        `runs/${enc(runId)}/diff?a=${enc(against.value.trim())}&b=${seq}`,
      );
      const envelope = d.envelope ?? [];
      // The payload's changes first; the envelope's (id, time, checksum, sequence) only on demand.
      append(
        result,
        h('p', {}, `#${d.a} → #${d.b}: ${d.changes.length} payload change${d.changes.length === 1 ? '' : 's'}`),
        changeList(d.changes),
        envelope.length > 0
          ? h(
              'details',
              { class: 'envelope' },
              h('summary', {}, `Envelope: ${envelope.length} change${envelope.length === 1 ? '' : 's'}`),
              changeList(envelope),
            )
          : null,
      );
    } catch (err) {
      showError(result, err);
    }
  };
  const form = h(
    'form',
    { class: 'diff-form', onsubmit: (ev: Event) => (ev.preventDefault(), void runDiff()) },
    h('label', { for: 'diff-against' }, 'Compare with snapshot '),
    against,
    ' ',
    h('button', { type: 'submit' }, 'Diff'),
  );
  append(
    main,
    h('h1', {}, `${runId} #${String(snapshot.sequence)}`),
    h(
      'p',
      { class: 'muted' },
      `${String(snapshot.source)} · ${String(snapshot.status)} · ${shortTime(String(snapshot.createdAt))} · ${String(snapshot.id)}`,
    ),
    form,
    result,
    graphSection(runId, snapshot.langgraph as Record<string, unknown> | undefined),
    h(
      'details',
      { open: snapshot.langgraph ? undefined : true },
      h('summary', {}, 'Document'),
      h('div', { id: 'tree', class: 'tree' }, jsonTree(snapshot)),
    ),
  );
  if (seq > 1) await runDiff();
}

function changeList(changes: readonly Change[]): HTMLElement {
  return h(
    'ul',
    { class: 'changes' },
    ...changes.map((c) =>
      h(
        'li',
        { class: c.kind, 'data-path': c.path },
        h('span', { class: 'kind' }, c.kind),
        ' ',
        h('code', {}, c.path),
        c.kind === 'changed'
          ? h('span', { class: 'vals' }, ` ${JSON.stringify(c.from)} → ${JSON.stringify(c.to)}`)
          : h('span', { class: 'vals' }, ` ${JSON.stringify(c.kind === 'added' ? c.to : c.from)}`),
      ),
    ),
  );
}

/** A LangGraph checkpoint as LangGraph users read it: thread, node, step, next, channels, pending writes, interrupts, parent, children (forks). */
function graphSection(runId: string, g: Record<string, unknown> | undefined): HTMLElement | null {
  if (!g) return null;
  const writes = (g.pendingWrites ?? []) as { taskPath: string; channel: string; value: unknown }[];
  const interrupts = (g.interrupts ?? []) as unknown[];
  const parent = typeof g.parentCheckpointId === 'string' ? g.parentCheckpointId : null;
  const next = (g.next ?? []) as string[];
  const children = (g.children ?? []) as { checkpointId: string; source: string | null }[];
  return h(
    'section',
    { id: 'graph', class: 'panel', 'aria-label': 'LangGraph checkpoint' },
    h('h2', {}, 'Graph'),
    h(
      'dl',
      {},
      ...(
        [
          ['Thread', `${String(g.threadId)}${g.checkpointNs ? ` (${String(g.checkpointNs)})` : ''}`],
          ['Checkpoint', String(g.checkpointId)],
          ['Step', `${String(g.step ?? '—')} (${String(g.source)})`],
          ['Next', next.length > 0 ? next.join(', ') : 'nothing: the graph has finished'],
        ] as const
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
      h('dt', {}, 'Parent'),
      h('dd', {}, parent ? h('a', { href: `#/run/${enc(runId)}/snap/${enc(parent)}` }, parent) : '—'),
      ...(children.length > 0
        ? [
            h('dt', {}, children.length > 1 ? 'Forks' : 'Child'),
            h(
              'dd',
              { id: 'children' },
              ...children.flatMap((c, i) => [
                ...(i > 0 ? [', '] : []),
                h('a', { href: `#/run/${enc(runId)}/snap/${enc(c.checkpointId)}` }, c.checkpointId),
                ` (${c.source ?? '?'})`,
              ]),
            ),
          ]
        : []),
    ),
    interrupts.length > 0 ? h('p', { class: 'warn', id: 'interrupts' }, 'Interrupts: ', JSON.stringify(interrupts)) : null,
    h('h3', {}, 'Channels'),
    h('div', { id: 'channels', class: 'tree' }, jsonTree(g.channels)),
    writes.length > 0
      ? h(
          'ul',
          { id: 'pending-writes' },
          ...writes.map((w) => h('li', {}, h('code', {}, w.taskPath), ' → ', h('code', {}, w.channel), ` ${JSON.stringify(w.value)}`)),
        )
      : null,
  );
}

async function route(): Promise<void> {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  try {
    if (parts[0] === 'run' && parts[1] && parts[2] === 'snap' && parts[3]) await snapshotView(parts[1], parts[3]);
    else if (parts[0] === 'run' && parts[1]) await runView(parts[1]);
    else await runsView();
  } catch (err) {
    clear(main);
    showError(main, err);
  }
  // Ready once painted: a timeline's rows are drawn in an animation frame, which runs before this one.
  await new Promise<void>((painted) => requestAnimationFrame(() => painted()));
  main.dataset.ready = location.hash || '#/';
}

async function start(): Promise<void> {
  try {
    info = await get<Info>('info');
  } catch (err) {
    return showError(main, err);
  }
  window.addEventListener('hashchange', () => void route());
  await route();
}

void start();
