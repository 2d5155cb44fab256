import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { hasCode } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { recordingLogger } from '../util/testing.ts';
import { createFileSource } from './file-source.ts';
import { createPodConfig } from './pod-config.ts';
import { manifest, pod } from './testing.ts';
import type { PodSource, PodSourceName, PodUpdate } from './types.ts';

/** A source the test drives by hand. */
function fakeSource(name: PodSourceName) {
  let send: ((pods: KubeletPod[]) => void) | undefined;
  let stopped = false;
  const source: PodSource & { push(pods: KubeletPod[]): void; stopped(): boolean } = {
    name,
    start(s) {
      send = s;
    },
    stop() {
      stopped = true;
      return Promise.resolve();
    },
    push(pods) {
      send?.(pods);
    },
    stopped: () => stopped,
  };
  return source;
}

const summary = (u: PodUpdate) => `${u.source}:${u.op}:${u.pods.map((p) => p.metadata.name).join(',')}`;

describe('pod config', () => {
  it('delivers each source’s merged updates in order and knows when all sources were seen', () => {
    const file = fakeSource('file');
    const http = fakeSource('http');
    const got: PodUpdate[] = [];
    const config = createPodConfig({
      sources: [file, http],
      onUpdate: (u) => got.push(u),
      logger: nullLogger,
    });
    config.start();
    const all = new Set<PodSourceName>(['file', 'http']);
    assert.equal(config.seenAllSources(all), false);
    file.push([]);
    assert.equal(config.seenAllSources(all), false);
    http.push([pod('a', 'u1')]);
    assert.equal(config.seenAllSources(all), true);
    assert.equal(
      config.seenAllSources(new Set<PodSourceName>(['file'])),
      false,
      'the caller has not seen http yet',
    );
    http.push([pod('a', 'u1')]);
    http.push([pod('b', 'u2')]);
    assert.deepEqual(got.map(summary), ['file:ADD:', 'http:ADD:a', 'http:REMOVE:a', 'http:ADD:b']);
    assert.deepEqual(
      config.allPods().map((p) => p.metadata.name),
      ['b'],
    );
  });

  it('keeps delivering when the handler throws, and logs it', () => {
    const file = fakeSource('file');
    const got: PodUpdate[] = [];
    const logger = recordingLogger();
    const config = createPodConfig({
      sources: [file],
      onUpdate: (u) => {
        got.push(u);
        if (u.op === 'REMOVE') throw new Error('handler bug');
      },
      logger,
    });
    config.start();
    file.push([pod('a', 'u1')]);
    file.push([pod('b', 'u2')]);
    assert.deepEqual(got.map(summary), ['file:ADD:a', 'file:REMOVE:a', 'file:ADD:b']);
    assert.ok(logger.lines.some((l) => l.level === 'error' && l.fields.error === 'handler bug'));
  });

  it('stops every source and drops late snapshots', async () => {
    const file = fakeSource('file');
    const http = fakeSource('http');
    const got: PodUpdate[] = [];
    const config = createPodConfig({
      sources: [file, http],
      onUpdate: (u) => got.push(u),
      logger: nullLogger,
    });
    config.start();
    await config.stop();
    assert.ok(file.stopped() && http.stopped());
    file.push([pod('a', 'u1')]);
    assert.deepEqual(got, []);
  });

  it('refuses two sources with the same name', () => {
    assert.throws(
      () =>
        createPodConfig({
          sources: [fakeSource('file'), fakeSource('file')],
          onUpdate: () => {},
          logger: nullLogger,
        }),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
  });

  it('turns a manifest edit in a real directory into REMOVE of the old UID and ADD of the new', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-podconfig-'));
    const got: PodUpdate[] = [];
    let notify: () => void = () => {};
    const config = createPodConfig({
      sources: [
        createFileSource({
          path: dir,
          nodeName: 'n1',
          checkFrequencyMs: 20,
          logger: nullLogger,
          debounceMs: 5,
        }),
      ],
      onUpdate: (u) => {
        got.push(u);
        notify();
      },
      logger: nullLogger,
    });
    const until = (n: number) =>
      new Promise<void>((resolve) => {
        notify = () => {
          if (got.length >= n) resolve();
        };
        notify();
      });
    try {
      config.start();
      await until(1);
      await writeFile(join(dir, 'web.yaml'), JSON.stringify(manifest('web')));
      await until(2);
      await writeFile(join(dir, 'web.yaml'), JSON.stringify(manifest('web', 'busybox:1.30')));
      await until(4);
      assert.deepEqual(got.map(summary), [
        'file:ADD:',
        'file:ADD:web-n1',
        'file:REMOVE:web-n1',
        'file:ADD:web-n1',
      ]);
      assert.notEqual(got[2]?.pods[0]?.metadata.uid, got[3]?.pods[0]?.metadata.uid);
      assert.equal(got[3]?.pods[0]?.spec.containers[0]?.image, 'busybox:1.30');
    } finally {
      await config.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
