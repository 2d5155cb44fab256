import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { createBackoff } from './backoff.ts';
import { createBackoffStore } from './backoff-store.ts';
import { nullLogger } from './logger.ts';
import { createTestClock } from './testing.ts';

const S = 1_000;
const H = 3_600 * S;

async function tempFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-backoff-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'container-backoff.json');
}

describe('back-off store', () => {
  it('saves wall times and gives a new process the same age on its own monotonic clock', async (t) => {
    const file = await tempFile(t);
    const first = createTestClock(Date.UTC(2026, 10, 24, 12), 5_000_000);
    const b1 = createBackoff();
    b1.next('k', first.monotonic(), first.monotonic());
    b1.next('k', first.monotonic(), first.monotonic());
    await createBackoffStore(b1, file, nullLogger, first).save();
    const saved = JSON.parse(await readFile(file, 'utf8')) as Record<string, { lastUpdateMs: number }>;
    assert.equal(saved.k?.lastUpdateMs, first.now(), 'the file holds wall time');

    // A new process 30 s later: its monotonic clock starts near 0.
    const second = createTestClock(first.now() + 30 * S, 2 * S);
    const b2 = createBackoff();
    await createBackoffStore(b2, file, nullLogger, second).load();
    assert.deepEqual(b2.entries().get('k'), { delayMs: 20 * S, lastUpdateMs: 2 * S - 30 * S });
  });

  it('loads an entry saved "in the future" (the wall clock stepped back since) as updated just now', async (t) => {
    const file = await tempFile(t);
    const clock = createTestClock();
    await writeFile(file, JSON.stringify({ k: { delayMs: 40 * S, lastUpdateMs: clock.now() + H } }));
    const b = createBackoff();
    await createBackoffStore(b, file, nullLogger, clock).load();
    assert.deepEqual(b.entries().get('k'), { delayMs: 40 * S, lastUpdateMs: clock.monotonic() });
  });

  it('writes only when the table changed, whatever the clocks did in between', async (t) => {
    const file = await tempFile(t);
    const clock = createTestClock();
    const b = createBackoff();
    const store = createBackoffStore(b, file, nullLogger, clock);
    b.next('k', clock.monotonic(), clock.monotonic());
    await store.save();
    await rm(file);
    clock.advance(1_234);
    clock.stepWall(-H);
    await store.save();
    await assert.rejects(readFile(file), /ENOENT/, 'unchanged table: no write');
    b.next('k', clock.monotonic(), clock.monotonic());
    await store.save();
    assert.ok((await readFile(file, 'utf8')).includes('"delayMs":20000'));
  });
});
