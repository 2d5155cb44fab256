import assert from 'node:assert/strict';
import { appendFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createContainerLogManager, type ContainerLogManagerDeps } from './container-log-manager.ts';
import { readContainerLogs } from './read-logs.ts';
import { recordingLogger } from '../util/testing.ts';
import { criLine, FakeRuntime, Sink, ts, until, withTmpDir } from './testing.ts';

process.env.TZ = 'UTC';

const labels = (ns: string, pod: string, container: string) => ({
  'io.kubernetes.pod.namespace': ns,
  'io.kubernetes.pod.name': pod,
  'io.kubernetes.pod.uid': `uid-${pod}`,
  'io.kubernetes.container.name': container,
});

/** A runtime with one running container per name, each with a log of `bytes` bytes. */
async function setup(dir: string, names: string[], bytes = 100) {
  const runtime = new FakeRuntime();
  for (const name of names) {
    const logDir = join(dir, `default_${name}_uid`, name);
    await mkdir(logDir, { recursive: true });
    const logPath = join(logDir, '0.log');
    await writeFile(logPath, 'x'.repeat(bytes));
    runtime.containers.push({
      id: `id-${name}`,
      state: 'CONTAINER_RUNNING',
      logPath,
      labels: labels('default', name, name),
    });
  }
  return runtime;
}

function manager(runtime: FakeRuntime, extra: Partial<ContainerLogManagerDeps> = {}) {
  let t = Date.UTC(2024, 0, 2, 3, 4, 5);
  const logger = recordingLogger();
  const m = createContainerLogManager({
    runtime,
    maxSizeBytes: 50,
    maxFiles: 3,
    logger,
    now: () => (t += 1000),
    ...extra,
  });
  return { m, logger };
}

describe('container log manager', () => {
  it('rotates a log over the size, keeping maxFiles files with older rotations compressed', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['web']);
      const path = runtime.containers[0]!.logPath;
      const { m } = manager(runtime);
      for (let pass = 0; pass < 4; pass++) {
        assert.deepEqual(await m.rotateNow(), { checked: 1, rotated: 1, failed: 0, deferred: 0 });
        await appendFile(path, 'y'.repeat(60));
      }
      assert.deepEqual((await readdir(join(dir, 'default_web_uid', 'web'))).sort(), [
        '0.log',
        '0.log.20240102-030408.gz',
        '0.log.20240102-030409',
      ]);
      assert.deepEqual(runtime.filters[0], { state: { state: 'CONTAINER_RUNNING' } });
    });
  });

  it('leaves small logs and containers that are not running alone', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['small', 'exited'], 10);
      await writeFile(runtime.containers[1]!.logPath, 'x'.repeat(500));
      runtime.containers[1]!.state = 'CONTAINER_EXITED';
      const { m } = manager(runtime);
      assert.deepEqual(await m.rotateNow(), { checked: 1, rotated: 0, failed: 0, deferred: 0 });
      assert.ok(!runtime.calls.some((c) => c.includes('exited')));
    });
  });

  it('rolls a rotation back when reopen fails, and logs it with the pod and container', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['web', 'db']);
      runtime.onReopen = (c) =>
        c.id === 'id-web' ? Promise.reject(new Error('reopen refused')) : writeFile(c.logPath, '');
      const { m, logger } = manager(runtime);
      assert.deepEqual(await m.rotateNow(), { checked: 2, rotated: 1, failed: 1, deferred: 0 });
      assert.deepEqual(await readdir(join(dir, 'default_web_uid', 'web')), ['0.log']);
      assert.equal(
        (await readdir(join(dir, 'default_db_uid', 'db'))).length,
        2,
        'the other container still rotated',
      );
      const err = logger.lines.find((l) => l.level === 'error');
      assert.ok(err);
      assert.equal(err.fields.pod, 'default/web');
      assert.equal(err.fields.podUID, 'uid-web');
      assert.equal(err.fields.container, 'web');
      assert.equal(err.fields.containerID, 'id-web');
      assert.match(String(err.fields.err), /reopen refused/);
    });
  });

  it('asks the runtime to reopen a log file that went missing', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['web']);
      await rm(runtime.containers[0]!.logPath);
      const { m } = manager(runtime);
      assert.deepEqual(await m.rotateNow(), { checked: 1, rotated: 0, failed: 0, deferred: 0 });
      assert.ok(runtime.calls.includes('ReopenContainerLog id-web'));
      assert.deepEqual(await readdir(join(dir, 'default_web_uid', 'web')), ['0.log']);
    });
  });

  it('runs one pass at a time: a second call joins the pass in flight', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['web']);
      const { m } = manager(runtime);
      const [a, b] = await Promise.all([m.rotateNow(), m.rotateNow()]);
      assert.equal(a, b);
      assert.equal(runtime.calls.filter((c) => c === 'ListContainers').length, 1);
    });
  });

  it('bounds rotations per pass and continues with the others next pass', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['a', 'b', 'c']);
      const { m } = manager(runtime, { maxRotationsPerPass: 2 });
      assert.deepEqual(await m.rotateNow(), { checked: 2, rotated: 2, failed: 0, deferred: 1 });
      assert.deepEqual(await m.rotateNow(), { checked: 3, rotated: 1, failed: 0, deferred: 0 });
      for (const n of ['a', 'b', 'c'])
        assert.equal((await readdir(join(dir, `default_${n}_uid`, n))).length, 2, n);
    });
  });

  it('reports unhealthy and rejects when containers cannot be listed', async () => {
    const runtime = new FakeRuntime();
    runtime.listError = new Error('runtime down');
    const { m } = manager(runtime);
    await assert.rejects(m.rotateNow(), /runtime down/);
    assert.equal(m.healthy().ok, false);
    runtime.listError = undefined;
    await m.rotateNow();
    assert.deepEqual(m.healthy(), { ok: true, message: '' });
  });

  it('gives up on a CRI call past its deadline', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['web']);
      runtime.containerStatus = () => new Promise(() => {}); // never answers, ignores its signal
      const { m, logger } = manager(runtime, { criTimeoutMs: 30 });
      assert.deepEqual(await m.rotateNow(), { checked: 1, rotated: 0, failed: 1, deferred: 0 });
      assert.match(
        String(logger.lines.find((l) => l.level === 'error')?.fields.err),
        /ContainerStatus: no answer within 30 ms/,
      );
    });
  });

  it('refuses fewer than two files', () => {
    assert.throws(() => manager(new FakeRuntime(), { maxFiles: 1 }), { code: 'InvalidArgument' });
    assert.throws(() => manager(new FakeRuntime(), { maxSizeBytes: -1 }), { code: 'InvalidArgument' });
  });

  it('start runs passes every interval until stop, which cancels a pass in flight', async () => {
    const runtime = new FakeRuntime();
    const { m } = manager(runtime, { intervalMs: 20 });
    m.start();
    m.start();
    await until(() => runtime.calls.length >= 3, 2000, 'three passes');
    runtime.listContainers = () => new Promise(() => {}); // hangs, ignoring its signal
    const listed = runtime.calls.length;
    await new Promise((r) => setTimeout(r, 60));
    await m.stop();
    const after = runtime.calls.length;
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(runtime.calls.length, after, 'no pass after stop');
    assert.ok(after >= listed);
    await assert.rejects(m.rotateNow(), { code: 'Canceled' });
  });

  it('a reader following the log keeps going across a rotation', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['web'], 0);
      const path = runtime.containers[0]!.logPath;
      await writeFile(path, criLine(ts(0), 'stdout', 'F', 'before rotation ' + 'x'.repeat(60)));
      const { m } = manager(runtime);
      const stdout = new Sink();
      let running = true;
      const done = readContainerLogs({
        path,
        options: { follow: true, previous: false, timestamps: false },
        stdout,
        stderr: new Sink(),
        signal: new AbortController().signal,
        isRunning: () => Promise.resolve(running),
        pollIntervalMs: 50,
      });
      await until(() => stdout.text().startsWith('before rotation'), 2000, 'first line');
      assert.equal((await m.rotateNow()).rotated, 1);
      await appendFile(path, criLine(ts(1), 'stdout', 'F', 'after rotation'));
      await until(() => stdout.text().endsWith('after rotation\n'), 3000, 'line in the new file');
      running = false;
      assert.equal((await done).ended, 'not-running');
    });
  });

  it('rotates an oversized live file within the quick size check, without waiting for the next pass', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['chatty'], 10);
      const path = runtime.containers[0]!.logPath;
      const { m } = manager(runtime, { intervalMs: 60_000, sizeCheckIntervalMs: 20 });
      m.start();
      try {
        await until(() => runtime.calls.includes('ListContainers'));
        const lists = runtime.calls.filter((c) => c === 'ListContainers').length;
        await appendFile(path, 'z'.repeat(200));
        const files = () => readdir(join(dir, 'default_chatty_uid', 'chatty'));
        for (let i = 0; i < 250 && (await files()).length < 2; i++)
          await new Promise((r) => setTimeout(r, 20));
        assert.equal((await files()).length, 2, 'the live file and one rotated file');
        assert.equal(runtime.calls.filter((c) => c === 'ListContainers').length, lists, 'no new full pass');
      } finally {
        await m.stop();
      }
    });
  });

  it('does not count a container removed between the listing and its status call as a failure', async () => {
    await withTmpDir(async (dir) => {
      const runtime = await setup(dir, ['gone', 'kept']);
      const list = runtime.listContainers.bind(runtime);
      // The listing still shows `gone`, but the runtime has removed it by the status call.
      runtime.listContainers = async (...args) => {
        const listed = await list(...args);
        runtime.containers = runtime.containers.filter((c) => c.id !== 'id-gone');
        return listed;
      };
      const { m, logger } = manager(runtime);
      assert.deepEqual(await m.rotateNow(), { checked: 2, rotated: 1, failed: 0, deferred: 0 });
      assert.equal(logger.lines.filter((l) => l.level === 'error').length, 0);
    });
  });
});
