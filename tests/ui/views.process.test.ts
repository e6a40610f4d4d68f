import { Annotation, END, START, StateGraph, interrupt } from '@langchain/langgraph';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, systemClock, type StorageAdapter } from 'savepoint';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { manualClock } from 'savepoint/testing';
import { runCli } from '../../src/cli/run.js';
import { startUiServer, type UiServer } from '../../src/ui/server.js';
import { captureIo } from '../support/cli-io.js';
import { assertChromium, skipBrowser } from '../support/browser.js';

/** Run `ahead` written by a clock two days ahead of the viewer's; run `steps` with three snapshots and an index. */
async function defaultStore(): Promise<StorageAdapter> {
  const storage = memoryStorage();
  const ahead = createWriter({ storage, runId: 'ahead', clock: manualClock(Date.now() + 2 * 86_400_000), heartbeatIntervalMs: false });
  await ahead.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 1 } });
  await ahead.close();
  const steps = createWriter({ storage, runId: 'steps', coalesceWindowMs: 0, heartbeatIntervalMs: false });
  for (let step = 1; step <= 3; step++) await steps.checkpoint({ source: 'manual', status: 'in_progress', payload: { step } });
  await steps.close();
  return storage;
}

/** Thread `asking` stopped at an interrupt in node `ask`. */
async function graphStore(): Promise<StorageAdapter> {
  const storage = memoryStorage();
  const State = Annotation.Root({ n: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }) });
  const graph = new StateGraph(State)
    .addNode('inc', (s) => ({ n: s.n + 1 }))
    .addNode('ask', () => ({ n: Number(interrupt({ question: 'go?' })) }))
    .addEdge(START, 'inc')
    .addEdge('inc', 'ask')
    .addEdge('ask', END)
    .compile({ checkpointer: new SavepointSaver({ storage }) });
  await graph.invoke({ n: 1 }, { configurable: { thread_id: 'asking' } });
  return storage;
}

describe.skipIf(skipBrowser('tests/ui/views'))('the viewer reads as the CLI does', () => {
  let browser: Browser;
  let plain: UiServer;
  let graph: UiServer;
  let plainStorage: StorageAdapter;
  const api = async (ui: UiServer, path: string): Promise<Record<string, unknown>> => {
    const url = new URL(ui.url);
    return (await (await fetch(`${url.origin}${url.pathname.replace(/\/$/, '')}/api/${path}`)).json()) as Record<string, unknown>;
  };
  const open = async (url: string, hash: string): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${url}${hash}`);
    await page.waitForFunction((h) => document.getElementById('main')?.dataset.ready === h, hash || '#/');
    return page;
  };

  beforeAll(async () => {
    const executablePath = assertChromium();
    plainStorage = await defaultStore();
    plain = await startUiServer({ storage: plainStorage, profile: defaultProfile, clock: systemClock });
    graph = await startUiServer({ storage: await graphStore(), profile: langGraphProfile, clock: systemClock });
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await plain?.close();
    await graph?.close();
  });

  it('a time ahead of the viewer\'s clock is not read as "ago"', async () => {
    const page = await open(plain.url, '');
    const cell = await page.$eval('tr[data-run="ahead"] td:nth-child(4)', (td) => td.textContent ?? '');
    expect(cell).toMatch(/\(in \d+ \w+.*ahead of this clock\)/);
    expect(cell).not.toContain('ago');
    await page.close();
  });

  it('verify counts the files the CLI counts', async () => {
    const io = captureIo();
    expect(await runCli(['verify', 'steps', '--json'], io, { storage: plainStorage })).toBe(0);
    const cli = JSON.parse(io.out) as { checked: number };
    const viewer = await api(plain, 'runs/steps/verify');
    expect(viewer.checked).toBe(cli.checked);
  });

  it('the diff shows the payload first, the envelope on demand', async () => {
    const diff = await api(plain, 'runs/steps/diff?a=1&b=3');
    expect((diff.changes as { path: string }[]).map((c) => c.path)).toEqual(['/payload/step']);
    expect((diff.envelope as { path: string }[]).map((c) => c.path)).toEqual(expect.arrayContaining(['/id', '/sequence']));
    const page = await open(plain.url, '#/run/steps/snap/3');
    await page.waitForSelector('#diff ul.changes');
    expect(await page.textContent('#diff p')).toBe('#2 → #3: 1 payload change');
    expect(await page.$eval('#diff details.envelope', (d) => (d as HTMLDetailsElement).open)).toBe(false);
    await page.close();
  });

  it('the retention counts say what happens to the snapshots, never a bare "0 keep"', async () => {
    const page = await open(plain.url, '#/run/steps');
    await page.click('#show-retention').catch(() => undefined);
    const tags = await page
      .waitForSelector('#retention p .tag', { timeout: 5000 })
      .then(() => page.$$eval('#retention p .tag', (els) => els.map((e) => e.textContent ?? '')))
      .catch(() => [] as string[]);
    for (const t of tags) expect(t).not.toMatch(/^0 /);
    expect(tags.some((t) => /kept/.test(t))).toBe(true);
    await page.close();
  });

  it('a LangGraph checkpoint shows its channels, step, next node, interrupts and parent, not the envelope', async () => {
    const snapshot = await api(graph, 'runs/asking/snapshots/latest');
    const lg = snapshot.langgraph as { channels: Record<string, unknown>; next: string[]; interrupts: unknown[] };
    expect(lg.channels.n).toBe(2);
    expect(lg.next).toEqual(['ask']);
    expect(lg.interrupts).toHaveLength(1);
    const page = await open(graph.url, `#/run/asking/snap/${String(snapshot.sequence)}`);
    const graphText = await page.textContent('#graph');
    expect(graphText).toContain('ask');
    expect(graphText).toContain('go?');
    expect(await page.$$eval('#channels .key', (els) => els.map((e) => e.textContent))).toContain('n: ');
    expect(await page.$eval('#graph dd a', (a) => a.getAttribute('href'))).toMatch(/^#\/run\/asking\/snap\//);
    expect(await page.$eval('details:has(#tree)', (d) => (d as HTMLDetailsElement).open)).toBe(false);
    await page.close();
  });
});
