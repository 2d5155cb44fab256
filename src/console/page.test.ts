/**
 * The console page in a real headless chromium (Debian's, driven by puppeteer-core) against a fake
 * host: the real console handlers with a fake kubelet, and canned answers for the timeline, `why`
 * and container-log endpoints (the tskubelet.io/v1alpha1 documents). This is where the waterfall is tested: the
 * timeline endpoint is built on another branch; test/integration/console.test.ts covers the rest
 * against a real tskubelet on containerd.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'puppeteer-core';
import {
  contrastProblems,
  fakeConsole,
  fakeKubelet,
  horizontalOverflow,
  launchBrowser,
  startFakeHost,
  watchedPage,
  type FakeHost,
} from './testing.ts';

const text = (page: Page, selector: string) =>
  page.$eval(selector, (e) => (e as unknown as { textContent: string }).textContent);

void describe('console page in chromium (fake host)', () => {
  const kubelet = fakeKubelet();
  kubelet.add('web');
  kubelet.add('api', { ready: false, restarts: 3 });
  const fake = fakeConsole(kubelet);
  fake.events.record('Normal', 'Started', 'Started container main', {
    kind: 'Pod',
    namespace: 'default',
    name: 'web',
  });
  let host: FakeHost;
  let browser: Browser;
  let page: Page;
  let problems: string[];

  before(async () => {
    host = await startFakeHost(kubelet, fake.console);
    browser = await launchBrowser();
    ({ page, problems } = await watchedPage(browser));
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(`${host.url}/console/`, { waitUntil: 'domcontentloaded' });
  });
  after(async () => {
    await browser?.close();
    await host?.close();
  });

  void it('loads, goes live and lists the pods and the recorded events', async () => {
    await page.waitForSelector('#pod-list button[data-pod="default/web"]');
    await page.waitForSelector('#pod-list button[data-pod="default/api"]');
    await page.waitForFunction(
      () =>
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }
        ).document.getElementById('conn').textContent === 'Live',
    );
    assert.match(await text(page, '#pod-list button[data-pod="default/api"]'), /restarts 3/);
    assert.match(await text(page, '#events'), /Started container main/);
    assert.match(await text(page, '#node'), /Ready: True/);
  });

  void it('renders the waterfall of a pod from its timeline', async () => {
    await page.click('#pod-list button[data-pod="default/web"]');
    await page.click('#tab-timeline');
    await page.waitForSelector('#panel-timeline .wf-row');
    // What is drawn, not only the attributes: each bar's rendered width as a share of its row.
    const rows = (await page.evaluate(`[...document.querySelectorAll('#panel-timeline .wf-row')].map((r) => {
      const bar = r.querySelector('svg').getBoundingClientRect();
      const rect = r.querySelector('rect').getBoundingClientRect();
      return { step: r.dataset.step, share: rect.width / bar.width, start: (rect.left - bar.left) / bar.width };
    })`)) as { step: string; share: number; start: number }[];
    assert.equal(rows.length, 10);
    assert.equal(rows[0]?.step, 'seen');
    assert.ok((rows[0]?.share ?? 1) < 0.02, `the first step is a tick: ${JSON.stringify(rows[0])}`);
    const pull = rows.find((r) => r.step === 'image-pull-done');
    // 182 → 812.4 ms of a 1002 ms attempt: a bar from 18 % over about 63 % of the width.
    assert.ok(pull && pull.share > 0.6 && pull.share < 0.66, JSON.stringify(pull));
    assert.ok(pull && pull.start > 0.17 && pull.start < 0.19, JSON.stringify(pull));
    assert.match(await text(page, '#panel-timeline'), /Attempt 1 · 1\.00 s/);
    assert.match(await text(page, '#panel-timeline'), /image-pull-done main · busybox:1\.29 · 120\.6 KiB/);
  });

  void it("shows the pod's why with its findings and evidence", async () => {
    await page.click('#tab-why');
    await page.waitForSelector('#panel-why .finding');
    const why = await text(page, '#panel-why');
    assert.match(why, /crash-loop back-off/);
    assert.match(why, /CrashLoopBackOff container main/);
    assert.match(why, /nextRetryInSeconds37/);
    assert.match(why, /boom/);
  });

  void it('follows logs: a line written later appears', async () => {
    await page.click('#tab-logs');
    await page.click('#log-follow');
    await page.waitForFunction(() =>
      /line 0/.test(
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }
        ).document.getElementById('log-output').textContent,
      ),
    );
    host.logLine('tick 1');
    await page.waitForFunction(() =>
      /tick 1/.test(
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }
        ).document.getElementById('log-output').textContent,
      ),
    );
    await page.click('#log-follow');
    assert.equal(
      await page.$eval('#log-follow', (e) =>
        (e as unknown as { getAttribute(a: string): string }).getAttribute('aria-pressed'),
      ),
      'false',
    );
  });

  void it('shows a new pod, and drops a removed one, without a reload', async () => {
    kubelet.add('late');
    await page.waitForSelector('#pod-list button[data-pod="default/late"]');
    kubelet.remove('late');
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
          '#pod-list button[data-pod="default/late"]',
        ) === null,
    );
  });

  void it('is keyboard-navigable: Tab reaches a pod, arrows move between pods and tabs, Enter opens', async () => {
    await page.goto(`${host.url}/console/`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#pod-list button[data-pod="default/web"]');
    const focused = () =>
      page.evaluate(
        'document.activeElement?.dataset?.pod ?? document.activeElement?.id ?? ""',
      ) as Promise<string>;
    let reached = '';
    for (let i = 0; i < 8 && !reached.includes('/'); i++) {
      await page.keyboard.press('Tab');
      reached = await focused();
    }
    assert.equal(reached, 'default/api', 'the first pod in the list is reached by Tab');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(), 'default/web');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () =>
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }
        ).document.getElementById('pod-h').textContent === 'Pod default/web',
    );
    assert.equal(
      await page.$eval('#pod-list button[data-pod="default/web"]', (e) =>
        (e as unknown as { getAttribute(a: string): string }).getAttribute('aria-current'),
      ),
      'true',
    );
    await page.focus('#tab-overview');
    await page.keyboard.press('ArrowRight');
    assert.equal(await focused(), 'tab-timeline');
    assert.equal(
      await page.$eval('#tab-timeline', (e) =>
        (e as unknown as { getAttribute(a: string): string }).getAttribute('aria-selected'),
      ),
      'true',
    );
    await page.waitForSelector('#panel-timeline .wf-row');
  });

  void it('meets WCAG AA contrast for its text', async () => {
    assert.deepEqual(await contrastProblems(page), []);
  });

  void it('fits a phone (390×844): no horizontal scroll with a pod open', async () => {
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await page.goto('about:blank');
    await page.goto(`${host.url}/console/#default/api`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(
      () =>
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }
        ).document.getElementById('pod-h').textContent === 'Pod default/api',
    );
    for (const tab of ['#tab-overview', '#tab-timeline', '#tab-why', '#tab-logs']) {
      await page.click(tab);
      await new Promise((r) => setTimeout(r, 150));
      assert.ok(
        (await horizontalOverflow(page)) <= 0,
        `horizontal scroll on ${tab}: ${await horizontalOverflow(page)} px`,
      );
    }
  });

  void it('ran without a script error or a CSP violation', () => {
    assert.deepEqual(problems, []);
  });
});
