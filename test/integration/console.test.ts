/**
 * The node console in a real headless chromium (Debian's, driven by puppeteer-core) against a real
 * tskubelet process on the bed's containerd, standalone with static pods, the console on a loopback
 * listener (`--console-address`). The waterfall reads the pod's timeline from the real kubelet.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'puppeteer-core';
import {
  contrastProblems,
  horizontalOverflow,
  launchBrowser,
  watchedPage,
} from '../../src/console/testing.ts';
import { startStandaloneKubelet, type TskubeletProcess } from '../kit/process.ts';
import { freePort } from '../kit/net.ts';
import { IMAGE, podManifest, setupEnv, writeManifest, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';

const NODE_NAME = 'itest-console';

const podSel = (name: string) => `#pod-list button[data-pod="default/${name}-${NODE_NAME}"]`;
const textOf = (page: Page, id: string) =>
  page.evaluate(`document.getElementById(${JSON.stringify(id)}).textContent`) as Promise<string>;

let env: Env | undefined;
let proc: TskubeletProcess | undefined;
let browser: Browser | undefined;
let base = '';
let apiPort = 0;

function bed(): { env: Env; proc: TskubeletProcess; browser: Browser } {
  if (!env || !proc || !browser) throw new Error('test bed not set up (before() failed?)');
  return { env, proc, browser };
}

before(async () => {
  env = await setupEnv();
  await mkdir(env.manifests, { recursive: true });
  await writeManifest(
    env,
    'web.yaml',
    podManifest('web', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
  );
  await writeManifest(
    env,
    'ticker.yaml',
    podManifest('ticker', {
      containers: [
        {
          name: 'tick',
          image: IMAGE,
          command: ['sh', '-c', 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done'],
        },
      ],
    }),
  );
  const consolePort = await freePort();
  apiPort = await freePort();
  base = `http://127.0.0.1:${consolePort}`;
  proc = startStandaloneKubelet(env, {
    node: NODE_NAME,
    port: apiPort,
    extraArgs: ['--console-address', `127.0.0.1:${consolePort}`, '--v=2'],
  });
  const p = proc;
  await eventually(
    'the console listener answers',
    async () => {
      await p.assertRunning();
      const res = await fetch(`${base}/console/`, { signal: AbortSignal.timeout(2_000) }).catch(
        () => undefined,
      );
      return res?.ok ? true : undefined;
    },
    60_000,
  );
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await proc?.stop();
  await env?.close();
});

void describe('node console on a real tskubelet (chromium)', () => {
  let page: Page;
  let problems: string[];

  before(async () => {
    ({ page, problems } = await watchedPage(bed().browser));
    page.setDefaultTimeout(60_000);
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(`${base}/console/`, { waitUntil: 'domcontentloaded' });
  });

  void it('loads and lists the pods of the bed, Running, with the node Ready', async () => {
    await page.waitForSelector(podSel('web'));
    await page.waitForSelector(podSel('ticker'));
    await eventually(
      'both pods Running in the list',
      async () => {
        const texts = await page.$$eval('#pod-list button.pod', (bs) =>
          bs.map((b) => (b as unknown as { textContent: string }).textContent),
        );
        return texts.length === 2 && texts.every((t) => t.includes('Running')) ? texts : undefined;
      },
      60_000,
    );
    assert.equal(await textOf(page, 'conn'), 'Live');
    assert.equal(await textOf(page, 'node-name'), NODE_NAME);
    assert.match(await textOf(page, 'node'), /Ready: True/);
  });

  void it("shows the node's usage from the kubelet's Summary API and the events it recorded", async () => {
    const usage = await eventually(
      'CPU usage on the page',
      async () => {
        const t = await textOf(page, 'node');
        return /[\d.]+ of \d+ cores/.test(t) ? t : undefined;
      },
      30_000,
    );
    assert.match(usage, /of [\d.]+ GiB \(working set\)/);
    const events = await eventually('Started events', async () => {
      const t = await textOf(page, 'events');
      return /Started container tick/.test(t) ? t : undefined;
    });
    assert.match(events, new RegExp(`Pod default/ticker-${NODE_NAME}`));
  });

  void it('shows a new pod without a reload', async () => {
    await writeManifest(
      bed().env,
      'late.yaml',
      podManifest('late', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    );
    await page.waitForSelector(podSel('late'));
    await eventually(
      'the late pod Running on the page',
      async () => {
        const t = await page.$eval(
          podSel('late'),
          (b) => (b as unknown as { textContent: string }).textContent,
        );
        return t.includes('Running') ? t : undefined;
      },
      60_000,
    );
  });

  void it('follows logs: a container printing a line a second shows a new line', async () => {
    await page.click(podSel('ticker'));
    await page.click('#tab-logs');
    await page.click('#log-follow');
    const ticks = async () =>
      [...(await textOf(page, 'log-output')).matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
    const first = await eventually('log lines', async () => {
      const t = await ticks();
      return t.length > 0 ? Math.max(...t) : undefined;
    });
    const later = await eventually(
      'a later line, streamed',
      async () => {
        const t = await ticks();
        return t.length > 0 && Math.max(...t) >= first + 2 ? Math.max(...t) : undefined;
      },
      15_000,
    );
    assert.ok(later >= first + 2);
    assert.match(await textOf(page, 'log-status'), /Following tick/);
    await page.click('#log-follow');
  });

  void it("shows the pod's waterfall from its timeline", async () => {
    const res = await fetch(`${base}/debug/pods/default/ticker-${NODE_NAME}/timeline`);
    const body = await res.text();
    assert.equal(res.status, 200, body);
    await page.click('#tab-timeline');
    await page.waitForSelector('#panel-timeline .wf-row[data-step="container-started"]');
    const steps = await page.$$eval('#panel-timeline .wf-row', (rs) =>
      rs.map((r) => (r as unknown as { dataset: { step: string } }).dataset.step),
    );
    assert.ok(steps.includes('seen') && steps.includes('sandbox-created'), JSON.stringify(steps));
  });

  void it('is reachable by keyboard: Tab reaches a pod, Enter opens it', async () => {
    await page.goto('about:blank');
    await page.goto(`${base}/console/`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(podSel('late'));
    let focused = '';
    for (let i = 0; i < 8 && !focused.includes('/'); i++) {
      await page.keyboard.press('Tab');
      focused = (await page.evaluate('document.activeElement?.dataset?.pod ?? ""')) as string;
    }
    assert.equal(focused, `default/late-${NODE_NAME}`, 'the first pod in the list');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await eventually('the pod opened', async () =>
      (await textOf(page, 'pod-h')) === `Pod default/ticker-${NODE_NAME}` ? true : undefined,
    );
  });

  void it('meets WCAG AA contrast with real data on the page', async () => {
    assert.deepEqual(await contrastProblems(page), []);
  });

  void it('fits a phone (390×844): no horizontal scroll', async () => {
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await page.goto('about:blank');
    await page.goto(`${base}/console/#default/ticker-${NODE_NAME}`, { waitUntil: 'domcontentloaded' });
    await eventually('the pod opened from the URL', async () =>
      (await textOf(page, 'pod-h')) === `Pod default/ticker-${NODE_NAME}` ? true : undefined,
    );
    await page.waitForSelector('#events li');
    for (const tab of ['#tab-overview', '#tab-logs']) {
      await page.click(tab);
      await new Promise((r) => setTimeout(r, 200));
      const overflow = await horizontalOverflow(page);
      assert.ok(overflow <= 0, `horizontal scroll of ${overflow} px on ${tab}`);
    }
  });

  void it('ran without a script error or a CSP violation', () => {
    assert.deepEqual(problems, []);
  });
});

void describe('node console access', () => {
  void it('on the kubelet API port, /console/ is behind its authentication (401 without credentials)', async () => {
    const { request } = await import('node:https');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: apiPort, path: '/console/', rejectUnauthorized: false },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 401);
  });

  void it('the loopback listener is read-only and serves no exec', async () => {
    assert.equal((await fetch(`${base}/console/`, { method: 'POST' })).status, 405);
    assert.equal((await fetch(`${base}/exec/default/web-${NODE_NAME}/main?command=id&output=1`)).status, 404);
  });

  void it('open streams end when tskubelet stops', async () => {
    const res = await fetch(`${base}/debug/console/events`);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const reader = res.body?.getReader();
    assert.ok(reader);
    const first = await reader.read();
    assert.match(Buffer.from(first.value ?? []).toString('utf8'), /event: snapshot/);
    const started = Date.now();
    const stopping = bed().proc.stop();
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true }) as const);
      if (r.done) break;
    }
    assert.ok(Date.now() - started < 30_000, 'the stream ended with the process');
    await stopping;
  });
});
