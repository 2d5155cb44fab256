import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nullLogger } from '../../../src/util/logger.ts';
import type { ServiceVerb } from './systemctl.ts';
import { answerSystemctl, writeSystemctl } from './systemctl.ts';

function systemctl(bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(join(bin, 'systemctl'), args, { timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

void describe('the systemctl stand-in kubeadm calls on a node without systemd', () => {
  let dir: string;
  let bin: string;
  let run: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tskubelet-systemctl-'));
    bin = join(dir, 'bin');
    run = join(dir, 'run');
    await writeSystemctl(bin, run, '/x/10-kubeadm.conf');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  void it('says the kubelet service exists and is enabled (preflight Service-Kubelet)', async () => {
    const enabled = await systemctl(bin, ['is-enabled', 'kubelet.service']);
    assert.deepEqual([enabled.code, enabled.stdout.trim()], [0, 'enabled']);
    const status = await systemctl(bin, ['status', 'kubelet']);
    assert.match(status.stdout, /Loaded: loaded \(\/x\/10-kubeadm.conf\)/);
    assert.doesNotMatch(status.stdout, /Loaded: not-found/);
  });

  void it('reports the kubelet active only while its pid file names a live process', async () => {
    assert.equal((await systemctl(bin, ['is-active', 'kubelet'])).stdout.trim(), 'inactive');
    await writeFile(join(run, 'kubelet.pid'), `${process.pid}\n`);
    const active = await systemctl(bin, ['is-active', 'kubelet']);
    assert.deepEqual([active.code, active.stdout.trim()], [0, 'active']);
    await rm(join(run, 'kubelet.pid'));
  });

  void it('knows no other unit (kubeadm asks about systemd-resolved)', async () => {
    const resolved = await systemctl(bin, ['is-active', 'systemd-resolved']);
    assert.deepEqual([resolved.code, resolved.stdout.trim()], [3, 'inactive']);
    assert.match((await systemctl(bin, ['status', 'docker'])).stdout, /Loaded: not-found/);
    assert.equal((await systemctl(bin, ['daemon-reload'])).code, 0);
  });

  void it('hands restart/stop to the harness in order and returns its outcome', async () => {
    const seen: ServiceVerb[] = [];
    const answerer = answerSystemctl(
      run,
      (verb) => {
        seen.push(verb);
        return verb === 'start' ? Promise.reject(new Error('no kubelet')) : Promise.resolve();
      },
      nullLogger,
    );
    try {
      assert.equal((await systemctl(bin, ['stop', 'kubelet'])).code, 0);
      assert.equal((await systemctl(bin, ['restart', 'kubelet'])).code, 0);
      assert.equal((await systemctl(bin, ['start', 'kubelet'])).code, 1);
      assert.equal((await systemctl(bin, ['restart', 'containerd'])).code, 5);
    } finally {
      await answerer.stop();
    }
    assert.deepEqual(seen, ['stop', 'restart', 'start']);
    assert.deepEqual(
      answerer.handled.map((h) => h.rc),
      [0, 0, 1],
    );
    assert.match(await readFile(join(run, 'systemctl.log'), 'utf8'), /systemctl restart kubelet/);
  });
});
