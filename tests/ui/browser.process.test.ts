import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultProfile, defineProfile, keepLast, listAll, systemClock } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { startUiServer, type UiServer } from '../../src/ui/server.js';
import { bigRunTimes, buildBigRun } from './big-store.js';
import { buildViewerStore } from './store.js';
import { assertChromium, skipBrowser } from '../support/browser.js';

/**
 * The viewer in Debian's chromium (playwright-core): every view's content asserted from the
 * DOM, driven by the keyboard where a user would, the token and the CSP enforced, a
 * 10,000-snapshot run opened and scrolled. Screenshots go to .tmp/ui-screenshots (not
 * committed). `.ci/run` installs chromium; without it this suite fails with the install
 * command, unless SAVEPOINT_SKIP_BROWSER=1 skips it with a warning (tests/support/browser.ts).
 */
const SHOTS = join(process.cwd(), '.tmp', 'ui-screenshots');

describe.skipIf(skipBrowser('tests/ui/browser'))('savepoint ui in a real browser', () => {
  let browser: Browser;
  let store: Awaited<ReturnType<typeof buildViewerStore>>;
  let ui: UiServer;
  const cspErrors: string[] = [];

  const open = async (url: string): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    await page.goto(url);
    return page;
  };
  const ready = (page: Page, hash: string) => page.waitForFunction((h) => document.getElementById('main')?.dataset.ready === h, hash);

  beforeAll(async () => {
    const executablePath = assertChromium();
    mkdirSync(SHOTS, { recursive: true });
    store = await buildViewerStore();
    ui = await startUiServer({
      storage: fsStorage({ dir: store.dir, create: false, cleanupOnOpen: false }),
      profile: defaultProfile,
      clock: systemClock,
    });
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await ui?.close();
    await store?.close();
  });

  it('lists runs with status, lock holder and resumability', async () => {
    const page = await open(ui.url);
    await ready(page, '#/');
    const rows = await page.$$eval('#runs tbody tr', (trs) =>
      trs.map((tr) => [tr.getAttribute('data-run'), ...Array.from(tr.querySelectorAll('td')).map((td) => td.textContent ?? '')]),
    );
    const byRun = Object.fromEntries(rows.map((r) => [r[0], r.slice(1)]));
    expect(Object.keys(byRun).sort()).toEqual(['agent-damaged', 'agent-idle', 'agent-live', 'build-finished']);
    expect(byRun['build-finished']![1]).toBe('completed');
    expect(byRun['build-finished']![7]).toContain('finished');
    expect(byRun['agent-idle']![7]).toMatch(/^yes, at /);
    expect(byRun['agent-live']![6]).toMatch(/^pid \d+ on .+, lease ends in \d+ s$/);
    await page.screenshot({ path: join(SHOTS, 'runs.png') });
    await page.close();
  });

  it("walks a run's timeline and a snapshot's tree and diff by keyboard", async () => {
    const page = await open(ui.url);
    await ready(page, '#/');
    // Tab to the run's link and follow it.
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'agent-idle') break;
    }
    await page.keyboard.press('Enter');
    await ready(page, '#/run/agent-idle');
    await page.waitForFunction(() => document.getElementById('run-summary')?.textContent === '4 snapshots, 2 heartbeats, 1 gap');
    const timeline = await page.$$eval('#timeline .row', (rows) =>
      rows.map((r) => ({ seq: r.getAttribute('data-seq'), cls: r.className, text: r.textContent })),
    );
    expect(timeline.map((r) => r.seq)).toEqual(['1', '2', '3', '4']);
    expect(timeline.filter((r) => r.cls.includes('heartbeat')).map((r) => r.seq)).toEqual(['2', '3']);
    expect(timeline.find((r) => r.cls.includes('after-gap'))?.seq).toBe('4');
    expect(timeline[3]!.text).toContain('gap 3 h');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('timeline');
    await page.screenshot({ path: join(SHOTS, 'timeline.png') });
    // The newest is selected; move up one and open it.
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    await ready(page, '#/run/agent-idle/snap/3');
    expect(await page.textContent('h1')).toBe('agent-idle #3');
    const keys = await page.$$eval('#tree .key', (els) => els.map((e) => e.textContent));
    expect(keys).toEqual(expect.arrayContaining(['payload: ', 'beat: ', 'sourceDetails: ']));
    // The diff against the previous snapshot is shown at once; then compare with #1.
    await page.waitForSelector('#diff ul.changes');
    expect(await page.$$eval('#diff li', (lis) => lis.map((l) => `${l.className} ${l.getAttribute('data-path')}`))).toEqual(
      expect.arrayContaining(['changed /payload/beat', 'changed /sequence']),
    );
    await page.fill('#diff-against', '1');
    await page.press('#diff-against', 'Enter');
    await page.waitForFunction(() => document.querySelector('#diff p')?.textContent?.startsWith('#1 → #3'));
    expect(await page.$$eval('#diff li', (lis) => lis.map((l) => `${l.className} ${l.getAttribute('data-path')}`))).toContain(
      'added /payload/beat',
    );
    await page.screenshot({ path: join(SHOTS, 'snapshot.png') });
    await page.close();
  });

  it('shows verify findings with reason codes and the resume plan', async () => {
    const page = await open(`${ui.url}#/run/agent-damaged`);
    await ready(page, '#/run/agent-damaged');
    expect(await page.$$eval('#timeline .row .bad', (els) => els.map((e) => e.textContent))).toContain('checkpoint_schema_invalid');
    await page.click('#show-verify');
    await page.waitForSelector('#verify ul.findings');
    expect(await page.textContent('#verify p')).toMatch(/^Checked \d+ files: 1 problem$/);
    expect(await page.textContent('#verify .findings code')).toBe('checkpoint_schema_invalid');
    await page.click('#show-resume');
    await page.waitForSelector('#resume dl');
    const plan = await page.$$eval('#resume dd', (dds) => dds.map((d) => d.textContent));
    expect(plan[2]).toBe('yes');
    expect(plan[3]).toMatch(/^#2 \(in_progress\)/);
    await page.close();
  });

  it("marks a run's view ready only once its timeline rows are painted (regression: ready before the rows' animation frame; a loaded machine read none)", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // Records how many rows exist at the very moment the ready mark is set.
    await page.addInitScript(() => {
      const seen: number[] = [];
      (window as { __rowsAtReady?: number[] }).__rowsAtReady = seen;
      new MutationObserver((records) => {
        for (const r of records) if (r.attributeName === 'data-ready') seen.push(document.querySelectorAll('#timeline .row').length);
      }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-ready'] });
    });
    await page.goto(`${ui.url}#/run/agent-damaged`);
    await ready(page, '#/run/agent-damaged');
    const rowsAtReady = await page.evaluate(() => (window as { __rowsAtReady?: number[] }).__rowsAtReady);
    expect(rowsAtReady).toHaveLength(1);
    expect(rowsAtReady![0]).toBeGreaterThan(0);
    await page.close();
  });

  it('draws the retention dry run on the timeline and stays read-only', async () => {
    const page = await open(`${ui.url}#/run/build-finished`);
    await ready(page, '#/run/build-finished');
    await page.click('#show-retention');
    await page.waitForSelector('#timeline .row .tag[class*="act-"]');
    const actions = await page.$$eval('#timeline .row', (rows) => rows.map((r) => r.querySelector('.c-retention .tag')?.textContent));
    expect(actions.every((a) => a === 'kept' || a === 'deleted' || a === 'compressed' || a === 'summarized')).toBe(true);
    expect(await page.$('#apply-retention')).toBeNull();
    expect(await page.textContent('#retention')).toContain('Read-only viewer');
    await page.screenshot({ path: join(SHOTS, 'retention.png') });
    await page.close();
  });

  it('enforces the CSP: injected inline script does not run, the app itself causes no violation', async () => {
    const page = await open(ui.url);
    await ready(page, '#/');
    const before = cspErrors.length;
    await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__pwned = true';
      document.body.append(s);
    });
    await page.waitForTimeout(100);
    expect(await page.evaluate(() => (window as { __pwned?: boolean }).__pwned)).toBeUndefined();
    expect(cspErrors.length).toBeGreaterThan(before);
    cspErrors.length = before;
    expect(cspErrors).toEqual([]);
    await page.close();
  });

  it('refuses a page or an API call without the token', async () => {
    const page = await browser.newPage();
    const origin = new URL(ui.url).origin;
    expect((await page.goto(`${origin}/`))?.status()).toBe(404);
    expect((await page.goto(`${origin}/api/runs`))?.status()).toBe(404);
    await page.close();
  });

  it('applies a retention plan only with --allow-prune and a typed confirmation', async () => {
    const built = await buildViewerStore();
    const dir = built.dir;
    const storage = fsStorage({ dir, create: false, cleanupOnOpen: false });
    const pruning = await startUiServer({
      storage,
      profile: defineProfile({ ...defaultProfile, retention: { name: 'keep-one', rules: [keepLast(1)] } }),
      clock: systemClock,
      allowPrune: true,
    });
    try {
      const page = await open(`${pruning.url}#/run/build-finished`);
      await ready(page, '#/run/build-finished');
      await page.click('#show-retention');
      await page.waitForSelector('#apply-retention');
      expect(await page.$$eval('#timeline .c-retention .tag', (t) => t.map((e) => e.textContent))).toEqual(['deleted', 'deleted', 'kept']);
      await page.click('#apply-retention');
      await page.waitForSelector('dialog#confirm[open]');
      expect(await page.isDisabled('#confirm-apply')).toBe(true);
      await page.keyboard.type('prune');
      await page.click('#confirm-apply');
      await page.waitForFunction(() => document.querySelector('#confirm [role=status]')?.textContent?.startsWith('Applied'));
      // Through the store: its journal (the default mode) may not have applied the deletes to the directory yet.
      const history = (await listAll(storage, 'checkpoints/build-finished/history/')).map((e) => e.key);
      expect(history.filter((f) => f.endsWith('.json'))).toHaveLength(1);
      await page.close();
    } finally {
      await pruning.close();
      await storage.close();
      await built.close();
    }
  });

  describe('a 10,000-snapshot run', () => {
    let dir: string;
    let storage: ReturnType<typeof fsStorage>;
    let big: UiServer;
    beforeAll(async () => {
      dir = await buildBigRun('long-run', 10_000);
      storage = fsStorage({ dir, create: false, cleanupOnOpen: false });
      big = await startUiServer({ storage, profile: defaultProfile, clock: systemClock });
    }, 180_000);
    afterAll(async () => {
      await big?.close();
      await storage?.close();
      // 10,000 files: left behind, every test run added them to the temp directory.
      if (dir) rmSync(dir, { recursive: true, force: true });
    });
    const openLongRun = async (): Promise<Page> => {
      const page = await open(big.url);
      await ready(page, '#/');
      await page.evaluate(() => (location.hash = '#/run/long-run'));
      await page.waitForFunction(
        () => document.getElementById('run-summary')?.textContent === '10000 snapshots, 2000 heartbeats, 20 gaps',
        undefined,
        { timeout: 60_000 },
      );
      return page;
    };

    it('opens with a virtualized list', async () => {
      const page = await open(big.url);
      await ready(page, '#/');
      const t0 = Date.now();
      await page.evaluate(() => (location.hash = '#/run/long-run'));
      await page.waitForSelector('#timeline .row');
      const firstPaintMs = Date.now() - t0;
      // Only the visible rows exist, however long the run.
      expect(await page.$$eval('#timeline .row', (r) => r.length)).toBeLessThan(100);
      await page.waitForFunction(
        () => document.getElementById('run-summary')?.textContent === '10000 snapshots, 2000 heartbeats, 20 gaps',
        undefined,
        { timeout: 60_000 },
      );
      await page.keyboard.press('Home');
      await page.waitForFunction(() => document.querySelector('#timeline .row.selected')?.getAttribute('data-seq') === '1');
      await page.keyboard.press('End');
      await page.waitForFunction(() => document.querySelector('#timeline .row.selected')?.getAttribute('data-seq') === '10000');
      await page.screenshot({ path: join(SHOTS, 'long-run.png') });
      // Reported, not asserted tightly: the target (< 1 s) is measured by `npm run bench -- ui`.
      console.log(`savepoint ui: 10,000-snapshot run first paint ${firstPaintMs} ms`);
      expect(firstPaintMs).toBeLessThan(30_000);
      await page.close();
    }, 180_000);

    it('brushing the overview shows only that range, its snapshots apart; the whole-run button shows all again', async () => {
      const page = await openLongRun();
      const axis = async () =>
        page.$eval('#axis', (c) => ({
          from: Number((c as HTMLElement).dataset.from),
          to: Number((c as HTMLElement).dataset.to),
          marks: Number((c as HTMLElement).dataset.marks),
          columns: Number((c as HTMLElement).dataset.columns),
        }));
      await page.waitForFunction(() => document.getElementById('axis')?.dataset.marks === '10000');
      // The whole run: 10,000 marks crowd into the canvas's few hundred pixel columns, one solid bar.
      const whole = await axis();
      expect(whole.columns).toBeLessThan(whole.marks / 5);
      const times = bigRunTimes(10_000);
      const inWindow = (w: { from: number; to: number }) => times.filter((t) => t >= w.from && t <= w.to).length;

      const box = (await page.locator('#overview').boundingBox())!;
      await page.mouse.move(box.x + 20, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + 22, box.y + box.height / 2);
      await page.mouse.move(box.x + 24, box.y + box.height / 2);
      await page.mouse.up();
      await page.waitForFunction(() => document.getElementById('axis')?.dataset.marks !== '10000');
      const brushed = await axis();
      // Exactly the snapshots created in the brushed range, each on its own pixel column.
      expect(brushed.marks).toBe(inWindow(brushed));
      expect(brushed.marks).toBeGreaterThan(5);
      expect(brushed.marks).toBeLessThan(500);
      expect(brushed.columns).toBe(brushed.marks);
      expect(await page.textContent('#zoom-range')).toContain(`${brushed.marks} of 10000 snapshots`);
      // The list follows: its selection moved to the range's first snapshot.
      const firstSeq = times.findIndex((t) => t >= brushed.from) + 1;
      await page.waitForFunction(
        (seq) => document.querySelector('#timeline .row.selected')?.getAttribute('data-seq') === seq,
        String(firstSeq),
      );
      await page.screenshot({ path: join(SHOTS, 'long-run-brushed.png') });

      // The range survives a redraw of the timeline (the retention dry run marks it again).
      await page.click('#show-retention');
      await page.waitForSelector('#retention .tag');
      expect((await axis()).from).toBe(brushed.from);

      // Reset from the keyboard: the labelled button, then Enter.
      await page.focus('#zoom-reset');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.getElementById('axis')?.dataset.marks === '10000');
      expect(await page.textContent('#zoom-range')).toContain('whole run');
      await page.close();
    }, 180_000);

    it('keys and the wheel zoom the axis about its range; 0 shows the whole run', async () => {
      const page = await openLongRun();
      const marks = async () => Number(await page.$eval('#axis', (c) => (c as HTMLElement).dataset.marks));
      await page.waitForFunction(() => document.getElementById('axis')?.dataset.marks === '10000');
      await page.focus('#axis');
      for (let i = 0; i < 6; i++) await page.keyboard.press('+');
      const zoomed = await marks();
      expect(zoomed).toBeLessThan(10_000 / 16);
      await page.keyboard.press('ArrowRight');
      expect(await page.$eval('#axis', (c) => (c as HTMLElement).dataset.from)).not.toBe(String(bigRunTimes(10_000)[0]));
      await page.keyboard.press('0');
      expect(await marks()).toBe(10_000);
      const box = (await page.locator('#axis').boundingBox())!;
      await page.mouse.move(box.x + box.width / 2, box.y + 20);
      for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -100);
      await page.waitForFunction(() => Number(document.getElementById('axis')?.dataset.marks) < 10_000 / 2);
      await page.click('#zoom-in');
      await page.click('#zoom-out');
      await page.click('#zoom-reset');
      expect(await marks()).toBe(10_000);
      await page.close();
    }, 180_000);
  });
});
