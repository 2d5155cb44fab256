/**
 * The node VM boots into the node the cgroup v2 / systemd-driver work builds on (issue 26): systemd
 * as PID 1, a pure cgroup v2 hierarchy, logind, containerd's CRI with the systemd cgroup driver, the
 * checkout's Node 24 over 9p, the host reachable from the guest. Upstream's node e2e suite checks
 * its images the same way before running anything (kubernetes/kubernetes
 * test/e2e_node/remote/node_e2e.go, the image and environment checks of test/e2e_node/environment).
 *
 * One VM for the whole file (boot ~15 s on an idle 2-core machine; the first run also builds the
 * image, a few minutes). Not part of scripts/test.sh yet:
 *   node --test test/node-vm/boot.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { bootNodeVm, CHECKOUT, type NodeVm } from '../harness/index.ts';
import { createLogger, nullLogger, type Logger } from '../../src/util/logger.ts';

function testLogger(): Logger {
  return process.env.TSKUBELET_TEST_VERBOSE ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
}

/** A cold image build (debootstrap) plus a boot on a busy machine. */
const SETUP_TIMEOUT_MS = 40 * 60_000;
/** Guest commands run on emulated CPUs; Node's first start reads its 120 MiB binary over 9p. */
const GUEST_TIMEOUT_MS = 180_000;
const NODE = `${CHECKOUT}/node_modules/.bin/node`;

/** Numeric comparison of dotted versions ('2.36' >= '2.28'). */
function versionAtLeast(have: string, want: string): boolean {
  const a = have.split('.').map(Number);
  const b = want.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

describe('node VM', () => {
  let vm: NodeVm | undefined;
  const guest = (): NodeVm => {
    assert.ok(vm, 'the node VM did not boot (see the before hook)');
    return vm;
  };
  const sh = async (command: string): Promise<string> =>
    (await guest().run(command, { timeoutMs: GUEST_TIMEOUT_MS })).stdout.trim();

  before(
    async () => {
      vm = await bootNodeVm({ logger: testLogger() });
    },
    { timeout: SETUP_TIMEOUT_MS },
  );
  after(
    async () => {
      await vm?.stop();
    },
    { timeout: 180_000 },
  );

  it('boots with systemd as PID 1 to the running state', async (t) => {
    t.diagnostic(`boot ${guest().bootMs} ms, serial console ${guest().serialLog}`);
    const failed =
      guest().systemState === 'running' ? '' : await sh('systemctl --failed --no-legend --plain');
    assert.equal(guest().systemState, 'running', `failed units:\n${failed}`);
    assert.equal(await sh('ps -p 1 -o comm='), 'systemd');
    assert.match(await sh('readlink /proc/1/exe'), /\/lib\/systemd\/systemd$/);
  });

  it('mounts a pure cgroup v2 hierarchy with the cpu, memory, pids and io controllers delegated', async () => {
    assert.equal(await sh('stat -fc %T /sys/fs/cgroup'), 'cgroup2fs');
    assert.equal(await sh(`awk '$3 == "cgroup"' /proc/mounts`), '', 'no cgroup v1 hierarchy is mounted');
    const available = (await sh('cat /sys/fs/cgroup/cgroup.controllers')).split(/\s+/);
    const delegated = (await sh('cat /sys/fs/cgroup/cgroup.subtree_control')).split(/\s+/);
    for (const c of ['cpu', 'memory', 'pids', 'io']) {
      assert.ok(available.includes(c), `${c} not in cgroup.controllers (${available.join(' ')})`);
      assert.ok(
        delegated.includes(c),
        `${c} not in the root's cgroup.subtree_control (${delegated.join(' ')})`,
      );
    }
  });

  it('answers logind: systemd-inhibit lists inhibitors', async () => {
    const r = await guest().exec('systemd-inhibit --list --no-pager', { timeoutMs: GUEST_TIMEOUT_MS });
    assert.equal(r.code, 0, `systemd-inhibit --list: ${r.stderr}`);
    assert.equal(await sh('systemctl is-active systemd-logind'), 'active');
  });

  it('serves CRI from containerd with the systemd cgroup driver and the pod network ready', async () => {
    const out = await sh(`${NODE} ${CHECKOUT}/test/node-vm/guest/cri-status.ts`);
    const status = JSON.parse(out) as {
      version: { runtimeName: string; runtimeApiVersion: string };
      conditions: { type: string; status: boolean; reason: string }[];
      systemdCgroup: unknown;
    };
    assert.equal(status.version.runtimeName, 'containerd');
    assert.equal(status.version.runtimeApiVersion, 'v1');
    for (const type of ['RuntimeReady', 'NetworkReady']) {
      const c = status.conditions.find((x) => x.type === type);
      assert.equal(c?.status, true, `${type}: ${JSON.stringify(c)}`);
    }
    assert.equal(status.systemdCgroup, true);
  });

  it("runs the checkout's Node 24 over 9p on the guest's glibc", async () => {
    const out = await sh(
      `${NODE} -p 'const h = process.report.getReport().header; JSON.stringify({ v: process.version, compiler: h.glibcVersionCompiler, runtime: h.glibcVersionRuntime })'`,
    );
    const r = JSON.parse(out) as { v: string; compiler: string; runtime: string };
    assert.match(r.v, /^v24\./);
    assert.ok(versionAtLeast(r.runtime, r.compiler), `glibc ${r.runtime} older than Node's ${r.compiler}`);
  });

  it("reaches the host's loopback at 10.0.2.2", async () => {
    const token = `hello-from-the-host-${process.pid}`;
    const server: Server = createServer((_req, res) => res.end(token));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const addr = server.address();
      assert.ok(addr !== null && typeof addr === 'object');
      assert.equal(await sh(`curl -sS --max-time 30 http://10.0.2.2:${addr.port}/`), token);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
