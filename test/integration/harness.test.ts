import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { run } from '../harness/exec.ts';
import { BUSYBOX_IMAGE, PAUSE_IMAGE, listImages, removeAllPods, startContainerd } from '../harness/index.ts';
import type { ContainerdBed } from '../harness/index.ts';
import { criVersion, listPodSandboxes, podSandboxIp, runPodSandbox } from '../harness/cri-mini.ts';

/** True when `ip` (dotted IPv4) lies inside `cidr`. */
function inSubnet(ip: string, cidr: string): boolean {
  const [base = '', bitsText = '32'] = cidr.split('/');
  const toInt = (s: string) => s.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const bits = Number(bitsText);
  const size = 2 ** (32 - bits);
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(base) / size);
}

void describe('test bed containerd', () => {
  let bed: ContainerdBed;

  before(async () => {
    bed = await startContainerd();
    await removeAllPods(bed);
  });

  after(async () => {
    // Unset when before() failed: its error is the one to report.
    if (bed === undefined) return;
    await removeAllPods(bed);
    await bed.stop();
  });

  void it('answers CRI Version on its socket', async () => {
    assert.equal(bed.endpoint, `unix://${bed.socket}`);
    const v = await criVersion(bed.socket);
    assert.equal(v.runtimeName, 'containerd');
    assert.equal(v.runtimeApiVersion, 'v1');
  });

  void it('has the busybox and pause images imported in the CRI namespace', async () => {
    const images = await listImages(bed.socket);
    assert.match(images.get(BUSYBOX_IMAGE) ?? '', /^sha256:[0-9a-f]{64}$/);
    assert.match(images.get(PAUSE_IMAGE) ?? '', /^sha256:[0-9a-f]{64}$/);
  });

  void it('reuses the running instance on a second start, and that handle does not stop it', async () => {
    const again = await startContainerd();
    await again.stop();
    const v = await criVersion(bed.socket);
    assert.equal(v.runtimeName, 'containerd');
  });

  void it('runs a command in the busybox image', async () => {
    const { stdout } = await run(
      'ctr',
      [
        '-a',
        bed.socket,
        '-n',
        'k8s.io',
        'run',
        '--rm',
        BUSYBOX_IMAGE,
        `bed-echo-${process.pid}`,
        'sh',
        '-c',
        'echo hi; id -u nobody',
      ],
      { timeoutMs: 30_000 },
    );
    assert.equal(stdout, 'hi\n65534\n');
  });

  void it('has a pause image that exits on SIGTERM', async () => {
    const ctr = (...args: string[]) =>
      run('ctr', ['-a', bed.socket, '-n', 'k8s.io', ...args], { timeoutMs: 30_000 });
    const name = `bed-pause-${process.pid}`;
    await ctr('run', '-d', PAUSE_IMAGE, name);
    try {
      await ctr('task', 'kill', '-s', 'SIGTERM', name);
      let status = '';
      for (let i = 0; i < 200 && status !== 'STOPPED'; i++) {
        const { stdout } = await ctr('task', 'ls');
        status =
          stdout
            .split('\n')
            .find((l) => l.startsWith(`${name} `))
            ?.trim()
            .split(/\s+/)[2] ?? '';
        if (status !== 'STOPPED') await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(status, 'STOPPED');
    } finally {
      await ctr('task', 'rm', '-f', name).catch(() => undefined);
      await ctr('containers', 'rm', name);
    }
  });

  void it('gives a CRI pod sandbox an IP in the pod subnet, and removeAllPods removes it', async () => {
    const id = await runPodSandbox(bed.socket, {
      name: 'bed-check',
      namespace: 'default',
      uid: `bed-${process.pid}`,
    });
    const ip = await podSandboxIp(bed.socket, id);
    assert.ok(inSubnet(ip, bed.podSubnet), `sandbox IP ${ip} outside ${bed.podSubnet}`);
    assert.deepEqual(
      (await listPodSandboxes(bed.socket)).map((s) => s.id),
      [id],
    );
    await removeAllPods(bed);
    assert.deepEqual(await listPodSandboxes(bed.socket), []);
  });
});
