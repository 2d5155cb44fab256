import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { recordingLogger } from '../util/testing.ts';
import { runCommand } from '../util/child-process.ts';
import { createShutdownManager } from './shutdown-manager.ts';
import { INHIBIT_WHY, createSystemdLogind, type SystemdLogindOptions } from './systemd-logind.ts';
import { shutdownPod } from './testing.ts';
import { until } from '../../test/kit/poll.ts';

const PYTHON = '/usr/bin/python3';
const FAKE = path.join(import.meta.dirname, 'fake-logind.py');
const TOOLS = ['busctl', 'gdbus', 'systemd-inhibit', 'dbus-daemon'];

/** Why the tests that need the D-Bus tools (and, with `python`, the fake logind) cannot run here. */
async function missing(python: boolean): Promise<string | undefined> {
  const probe = await runCommand('sh', ['-c', `command -v ${TOOLS.join(' ')} >/dev/null`], {
    timeoutMs: 5_000,
  });
  if (probe.code !== 0) return `needs ${TOOLS.join(', ')}`;
  if (!python) return undefined;
  const py = await runCommand(PYTHON, ['-c', 'import dbus, gi'], { timeoutMs: 10_000 }).catch(
    () => undefined,
  );
  return py?.code === 0
    ? undefined
    : `needs ${PYTHON} with the dbus and gi modules (python3-dbus, python3-gi)`;
}

/** Polls `check` every 20 ms until it holds, or fails after `ms`. */

function logind(over: Partial<SystemdLogindOptions> = {}) {
  return createSystemdLogind({ logger: recordingLogger(), callTimeoutMs: 5_000, ...over });
}

describe('systemd logind without a system bus', async () => {
  const skip = await missing(false);
  const env = { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/nonexistent/tskubelet-test-bus' };

  it('reports logind unreachable, saying why, and every call fails as Unavailable', { skip }, async () => {
    const l = logind({ env });
    const r = await l.reachable();
    assert.equal(r.reachable, false);
    assert.match(r.reachable ? '' : r.reason, /logind is not reachable on the system D-Bus: .+/);
    await assert.rejects(l.inhibitDelayMaxMs(), (err) => hasCode(err, 'Unavailable'));
    await assert.rejects(
      l.inhibitShutdown(),
      (err) => hasCode(err, 'Unavailable') && /systemd-inhibit/.test(String(err)),
    );
    const handlers = { onPrepareForShutdown: () => undefined, onError: () => undefined };
    await assert.rejects(
      l.watchShutdown(handlers),
      (err) => hasCode(err, 'Unavailable') && /busctl monitor/.test(String(err)),
    );
  });

  it('names a tool that is not installed', async () => {
    const l = logind({
      commands: { busctl: '/nonexistent/busctl', systemdInhibit: '/nonexistent/systemd-inhibit' },
    });
    const r = await l.reachable();
    assert.match(r.reachable ? '' : r.reason, /\/nonexistent\/busctl.*ENOENT/);
    await assert.rejects(l.inhibitShutdown(), /systemd-inhibit could not be started: .*ENOENT/);
  });
});

describe('systemd logind against a fake logind on a private bus', async () => {
  const skip = await missing(true);
  let fake: ChildProcessWithoutNullStreams | undefined;
  let dropInDir = '';
  let env: NodeJS.ProcessEnv = {};

  const control = async (method: string, ...args: string[]): Promise<string> => {
    const r = await runCommand(
      'gdbus',
      [
        'call',
        '--system',
        '--dest',
        'org.freedesktop.login1',
        '--object-path',
        '/org/freedesktop/login1',
        '--method',
        `test.Control.${method}`,
        ...args,
      ],
      { env, timeoutMs: 5_000 },
    );
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  const inhibitors = async () => Number(/(\d+),\)$/.exec(await control('Inhibitors'))?.[1]);

  before(async () => {
    if (skip) return;
    dropInDir = await mkdtemp(path.join(tmpdir(), 'tskubelet-logind-'));
    const child = spawn(PYTHON, [FAKE, dropInDir, '5000000'], { stdio: ['pipe', 'pipe', 'pipe'] });
    fake = child;
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('fake logind did not start in 10s')), 10_000);
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (s: string) => {
        out += s;
        const m = /^address (\S+)$/m.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('exit', (code) => reject(new Error(`fake logind exited with ${code}`)));
    });
    env = { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address };
  });

  after(async () => {
    if (fake && fake.exitCode === null) {
      const exited = new Promise((r) => fake?.once('exit', r));
      fake.stdin.end();
      const timer = setTimeout(() => fake?.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (dropInDir) await rm(dropInDir, { recursive: true, force: true });
  });

  it('reads InhibitDelayMaxUSec in milliseconds', { skip }, async () => {
    const l = logind({ env });
    assert.deepEqual(await l.reachable(), { reachable: true });
    assert.equal(await l.inhibitDelayMaxMs(), 5_000);
  });

  it('raises InhibitDelayMaxSec with the 99-kubelet.conf drop-in and a reload', { skip }, async () => {
    const l = logind({ env, dropInDir });
    await l.overrideInhibitDelay(30_500);
    assert.equal(
      await readFile(path.join(dropInDir, '99-kubelet.conf'), 'utf8'),
      '# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=31\n',
    );
    await l.reloadLogindConf();
    assert.equal(await l.inhibitDelayMaxMs(), 31_000);
  });

  it('holds a delay lock for shutdown as kubelet until it is released', { skip }, async () => {
    const l = logind({ env });
    const lock = await l.inhibitShutdown();
    try {
      assert.equal(lock.held(), true);
      assert.equal(await inhibitors(), 1);
      assert.equal(await control('LastInhibit'), `(('shutdown', 'kubelet', '${INHIBIT_WHY}', 'delay'),)`);
    } finally {
      await lock.release();
    }
    assert.equal(lock.held(), false);
    await until('the lock to be released', async () => (await inhibitors()) === 0);
    await lock.release();
  });

  it('delivers PrepareForShutdown true and false in order, and nothing after stop', { skip }, async () => {
    const seen: boolean[] = [];
    const errors: Error[] = [];
    const watch = await logind({ env }).watchShutdown({
      onPrepareForShutdown: (active) => seen.push(active),
      onError: (err) => errors.push(err),
    });
    try {
      await control('Emit', 'true');
      await control('Emit', 'false');
      await until('both signals', () => seen.length === 2);
      assert.deepEqual(seen, [true, false]);
    } finally {
      await watch.stop();
    }
    await control('Emit', 'true');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(seen, [true, false]);
    assert.deepEqual(errors, []);
  });

  it(
    'drives the shutdown manager end to end: lock, kills on PrepareForShutdown, release, re-take on cancel',
    { skip },
    async () => {
      const killed: string[] = [];
      const manager = createShutdownManager({
        shutdownGracePeriodMs: 2_000,
        shutdownGracePeriodCriticalPodsMs: 1_000,
        logind: logind({ env, dropInDir }),
        activePods: () => [shutdownPod('web')],
        killPod: (pod) => {
          killed.push(pod.metadata.name);
          return Promise.resolve();
        },
        logger: recordingLogger(),
      });
      try {
        assert.equal((await manager.start()).state, 'running');
        assert.equal(await inhibitors(), 1);
        await control('Emit', 'true');
        await until('the pod kill', () => killed.length === 1);
        assert.equal(manager.readyConditionError(), 'node is shutting down');
        await until('the lock to be released', async () => (await inhibitors()) === 0);
        await control('Emit', 'false');
        await until('the lock to be taken again', async () => (await inhibitors()) === 1);
        assert.equal(manager.shuttingDown(), false);
      } finally {
        await manager.stop();
      }
      await until('the lock to be released at stop', async () => (await inhibitors()) === 0);
    },
  );
});
