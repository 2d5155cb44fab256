import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { nullLogger } from '../../../src/util/logger.ts';
import { until } from '../../kit/poll.ts';
import { running } from '../cluster/daemon.ts';
import { kubeletCommand, kubeletService } from './kubelet-service.ts';
import { nodePaths } from './paths.ts';
import type { NodePaths } from './paths.ts';
import { KUBEADM_DROP_IN } from './unit.ts';

void describe('the node kubelet as its unit runs it', () => {
  let paths: NodePaths;
  before(async () => {
    paths = nodePaths(await mkdtemp(join(tmpdir(), 'tskubelet-kubelet-service-')));
    await mkdir(dirname(paths.dropIn), { recursive: true });
    await mkdir(paths.kubeletDir, { recursive: true });
    await mkdir(paths.binDir, { recursive: true });
    await mkdir(paths.runDir, { recursive: true });
    await writeFile(paths.dropIn, KUBEADM_DROP_IN);
    await writeFile(
      paths.kubeadmFlags,
      `KUBELET_KUBEADM_ARGS="--root-dir=${paths.kubeletDir} --node-ip=127.0.0.1"\n`,
    );
    // A stand-in kubelet that records its argv and environment, then waits to be stopped.
    await writeFile(
      join(paths.binDir, 'kubelet'),
      `#!/bin/sh\necho "$@" > ${join(paths.rootDir, 'argv')}\necho "$KUBELET_KUBEADM_ARGS" > ${join(paths.rootDir, 'env')}\nexec sleep 600\n`,
    );
    await chmod(join(paths.binDir, 'kubelet'), 0o755);
  });
  after(() => rm(paths.rootDir, { recursive: true, force: true }));

  void it("reads the command line from the node's drop-in and env files (paths under its root)", async () => {
    const { argv } = await kubeletCommand(paths);
    assert.deepEqual(argv, [
      '/usr/bin/kubelet',
      '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      '--config=/var/lib/kubelet/config.yaml',
      `--root-dir=${paths.kubeletDir}`,
      '--node-ip=127.0.0.1',
    ]);
  });

  void it("starts the node's kubelet with that command and environment, once, and stops it", async () => {
    // This process's own mount namespace stands in for the node's.
    const service = kubeletService(paths, '/proc/self/ns/mnt', nullLogger);
    await service.start();
    const pid = await until('the kubelet pid', () => service.pid(), { timeoutMs: 10_000 });
    await service.start(); // already running: no second one
    assert.equal(await service.pid(), pid);
    const argv = await until(
      'argv recorded',
      () => readFile(join(paths.rootDir, 'argv'), 'utf8').catch(() => undefined),
      {
        timeoutMs: 10_000,
      },
    );
    assert.match(
      argv,
      /^--bootstrap-kubeconfig=\/etc\/kubernetes\/bootstrap-kubelet.conf .*--node-ip=127.0.0.1$/m,
    );
    assert.match(await readFile(join(paths.rootDir, 'env'), 'utf8'), /--root-dir=/);
    await service.stop();
    assert.equal(await service.pid(), undefined);
    assert.equal(await running(pid), false, 'the kubelet (which exec()ed another program) still runs');
    assert.equal(await readFile(join(paths.runDir, 'kubelet.pid'), 'utf8').catch(() => 'gone'), 'gone');
  });
});
