import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import { testKubeletConfig } from '../config/testing.ts';
import { FakeKmsg } from '../oom/testing.ts';
import { FakeImageService, FakeRuntimeService } from '../runtime/cri/testing.ts';
import { nullLogger } from '../util/logger.ts';
import { newKubelet } from './new-kubelet.ts';
import { untilWithin } from './testing.ts';

const until = untilWithin(10_000);

describe('a static pod manifest the kubelet cannot use', () => {
  it('is a Warning event on the Node naming the file, once, and the kubelet keeps running', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-source-problems-'));
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    // A hostPath with `..`: refused by validation (upstream ValidatePodCreate: no `..` in a hostPath).
    await writeFile(
      join(manifests, 'bad.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: c, image: busybox:1.29}]\n' +
        '  volumes: [{name: h, hostPath: {path: /var/log/../../etc}}]\n',
    );
    const events: { type: string; reason: string; message: string }[] = [];
    const kubelet = await newKubelet(
      testKubeletConfig({
        rootDir: join(dir, 'root'),
        podLogsDir: join(dir, 'logs'),
        staticPodPath: manifests,
        fileCheckFrequencyMs: 100,
      }),
      {
        logger: nullLogger,
        version: 'test',
        nodeIP: '192.0.2.10',
        runtimeService: new FakeRuntimeService(),
        imageService: new FakeImageService(),
        recorder: createMemoryRecorder(),
        openKmsg: new FakeKmsg().opener,
        nodeEvent: (type, reason, message) => events.push({ type, reason, message }),
      },
    );
    t.after(async () => {
      await kubelet.stop();
      await rm(dir, { recursive: true, force: true });
    });
    void kubelet.run();
    const event = await until('the event', () => events.find((e) => e.reason === 'InvalidManifest'));
    assert.equal(event.type, 'Warning');
    assert.match(event.message, /bad\.yaml/);
    assert.match(event.message, /must not contain '\.\.'/);
    // The file is read again every 100 ms: the same problem is not recorded again.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(events.filter((e) => e.reason === 'InvalidManifest').length, 1);
    assert.equal(kubelet.healthz().ok, true);
  });
});
