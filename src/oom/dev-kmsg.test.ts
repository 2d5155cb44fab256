import assert from 'node:assert/strict';
import {
  access,
  appendFile,
  constants,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isKubeletError } from '../util/errors.ts';
import { recordingLogger } from '../util/testing.ts';
import { devKmsgOpener, DEV_KMSG } from './dev-kmsg.ts';
import { LineSplitter, parseKmsgRecord } from './kmsg-record.ts';
import { createOomWatcher } from './oom-watcher.ts';

/** How many of this process's descriptors point at `path`. */
async function openDescriptors(path: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target === path) n++;
  }
  return n;
}

const readable = (path: string) =>
  access(path, constants.R_OK).then(
    () => true,
    () => false,
  );

describe('devKmsgOpener', () => {
  it('starts after what the log already holds, reads what is appended, and closes its descriptor', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-kmsg-'));
    try {
      const path = join(dir, 'kmsg');
      await writeFile(path, '6,1,10,-;an old line\n'.repeat(5000));
      const source = await devKmsgOpener({ path, logger: recordingLogger() })();
      assert.equal(await openDescriptors(path), 1);
      assert.equal((await source.read()).length, 0, 'the old records are skipped');
      await appendFile(path, '6,5001,20,-;a new line\n');
      assert.equal(new TextDecoder().decode(await source.read()), '6,5001,20,-;a new line\n');
      assert.equal((await source.read()).length, 0, 'nothing more: an empty read, no waiting');
      await Promise.all([source.close(), source.close()]);
      assert.equal(await openDescriptors(path), 0);
      assert.equal((await source.read()).length, 0, 'a read after close is empty');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects with an Unavailable KubeletError when the log cannot be opened', async () => {
    const open = devKmsgOpener({ path: '/nonexistent/kmsg', logger: recordingLogger() });
    await assert.rejects(
      open(),
      (err) => isKubeletError(err) && err.code === 'Unavailable' && /ENOENT/.test(err.message),
    );
  });

  it('opens the real /dev/kmsg at its end, without blocking', async (t) => {
    if (!(await readable(DEV_KMSG))) {
      t.skip('/dev/kmsg is not readable here');
      return;
    }
    const uptimeUs = Number((await readFile('/proc/uptime', 'utf8')).split(' ')[0]) * 1e6;
    const source = await devKmsgOpener({ logger: recordingLogger() })();
    try {
      const split = new LineSplitter(64 * 1024);
      // Whatever is read now was logged after the open (give the two clocks 2 s of slack).
      for (let i = 0; i < 100; i++) {
        const chunk = await source.read();
        if (chunk.length === 0) break;
        for (const line of split.push(chunk)) {
          const rec = parseKmsgRecord(line);
          if (rec) assert.ok(rec.timestampUs >= uptimeUs - 2e6, `an old record was replayed: ${line}`);
        }
      }
    } finally {
      await source.close();
    }
    assert.equal(await openDescriptors(DEV_KMSG), 0);
  });

  it('lets the watcher follow the real /dev/kmsg (healthy, no replayed OOM) and close it on stop', async (t) => {
    if (!(await readable(DEV_KMSG))) {
      t.skip('/dev/kmsg is not readable here');
      return;
    }
    const events: string[] = [];
    const watcher = createOomWatcher({
      nodeEvent: (_type, reason, message) => events.push(`${reason}: ${message}`),
      // Any kill at all: container OOMs already in the ring buffer (the OOMKilled integration test
      // leaves some) would come here if the watcher replayed the log.
      onOom: (oom) => events.push(`OOM: ${oom.processName}`),
      logger: recordingLogger(),
      pollIntervalMs: 10,
    });
    watcher.start();
    try {
      const end = Date.now() + 5_000;
      while (!watcher.health().ok && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(watcher.health(), { ok: true, message: '' });
      assert.equal(await openDescriptors(DEV_KMSG), 1);
    } finally {
      await watcher.stop();
    }
    assert.equal(await openDescriptors(DEV_KMSG), 0);
    assert.deepEqual(events, [], 'no OOM logged before the start is reported');
  });
});
