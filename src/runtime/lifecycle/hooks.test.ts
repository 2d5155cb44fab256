import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Container, KubeletPod } from '../../api/types.ts';
import { createMemoryRecorder } from '../../api/events.ts';
import type { ExecSyncResult } from '../cri/types.ts';
import { abortReason } from '../../util/abort.ts';
import { buildPod } from '../../../test/kit/pod.ts';
import {
  buildHttpGetRequest,
  createHookRunner,
  graceAfterPreStop,
  postStartTimeoutSeconds,
  restoreHookSpec,
  type HookRunnerDeps,
} from './hooks.ts';

const pod: KubeletPod = buildPod('web', {
  namespace: 'ns',
  uid: 'u-1',
  containers: [{ name: 'main', ports: [{ name: 'http', containerPort: 8080 }] }],
});
const container: Container = pod.spec.containers[0]!;
const target = { pod, container, containerId: 'c-123' };
const localIP = () => Promise.resolve('127.0.0.1');

function result(exitCode: number, stdout = '', stderr = ''): ExecSyncResult {
  return { exitCode, stdout: Buffer.from(stdout), stderr: Buffer.from(stderr) };
}

function runnerWith(exec: HookRunnerDeps['exec'], extra: Partial<HookRunnerDeps> = {}) {
  return createHookRunner({ exec, ...extra });
}

const noExec: HookRunnerDeps['exec'] = () => Promise.reject(new Error('exec not expected'));

describe('exec hooks', () => {
  it('runs the command in the container through ExecSync with the budget as its timeout', async () => {
    const calls: { id: string; cmd: string[]; timeout: number }[] = [];
    const hooks = runnerWith((id, cmd, timeout) => {
      calls.push({ id, cmd, timeout });
      return Promise.resolve(result(0, 'fine'));
    });
    const out = await hooks.run({ exec: { command: ['sh', '-c', 'echo hi'] } }, target, {
      timeoutSeconds: 30,
      podIP: localIP,
    });
    assert.deepEqual(out, { ok: true });
    assert.deepEqual(calls, [{ id: 'c-123', cmd: ['sh', '-c', 'echo hi'], timeout: 30 }]);
  });

  it('reports a non-zero exit with the command, the exit code and the output, as upstream words it', async () => {
    const hooks = runnerWith(() => Promise.resolve(result(3, 'out\n', 'bad thing')));
    const out = await hooks.run({ exec: { command: ['sh', '-c', 'exit 3'] } }, target, {
      timeoutSeconds: 30,
      podIP: localIP,
    });
    assert.equal(out.ok, false);
    assert.equal(
      !out.ok && out.message,
      'Exec lifecycle hook ([sh -c exit 3]) for Container "main" in Pod "web_ns(u-1)" failed - ' +
        `error: command 'sh -c exit 3' exited with 3: bad thing, message: "out\\nbad thing"`,
    );
  });

  it('reports a runtime error (e.g. the container is gone) as a failure', async () => {
    const hooks = runnerWith(() => Promise.reject(new Error('container not running')));
    const out = await hooks.run({ exec: { command: ['true'] } }, target, {
      timeoutSeconds: 5,
      podIP: localIP,
    });
    assert.ok(!out.ok && out.message.includes('failed - error: container not running'));
  });

  it('gives up when the budget runs out, and says so', async () => {
    const hooks = runnerWith(
      (_id, _cmd, _t, opts) =>
        new Promise((_resolve, reject) => {
          opts?.signal?.addEventListener('abort', () => reject(abortReason(opts.signal)), { once: true });
        }),
    );
    const out = await hooks.run({ exec: { command: ['sleep', '1000'] } }, target, {
      timeoutSeconds: 0.05,
      podIP: localIP,
    });
    assert.ok(!out.ok && out.message.includes('error: timed out after 0.05s'), !out.ok ? out.message : '');
  });

  it('fails an exec handler without a command instead of asking the runtime', async () => {
    const out = await runnerWith(noExec).run({ exec: {} }, target, { timeoutSeconds: 5, podIP: localIP });
    assert.ok(!out.ok && out.message.includes('exec handler has no command'));
  });
});

describe('httpGet hooks against a local server', () => {
  let server: Server;
  let port = 0;
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const replies = new Map<string, { status: number; location?: string }>();

  before(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      const r = replies.get(req.url ?? '') ?? { status: 200 };
      res.writeHead(r.status, r.location ? { location: r.location } : {});
      res.end('body');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const lastSeen = () => seen.at(-1);

  it('GETs path and query on the pod IP with the spec headers and the lifecycle user agent', async () => {
    const out = await runnerWith(noExec).run(
      {
        httpGet: {
          port,
          path: '/hooks/start?x=1',
          httpHeaders: [
            { name: 'X-Token', value: 'a' },
            { name: 'x-token', value: 'b' },
          ],
        },
      },
      target,
      { timeoutSeconds: 5, podIP: localIP },
    );
    assert.deepEqual(out, { ok: true });
    const req = lastSeen();
    assert.equal(req?.url, '/hooks/start?x=1');
    assert.equal(req?.headers['x-token'], 'a, b');
    assert.equal(req?.headers.accept, '*/*');
    assert.match(req?.headers['user-agent'] ?? '', /^kube-lifecycle\/\d+\.\d+$/);
  });

  it('resolves a named port from the container ports and honours a Host header', async () => {
    const c: Container = { name: 'main', ports: [{ name: 'admin', containerPort: port }] };
    const out = await runnerWith(noExec).run(
      { httpGet: { port: 'admin', path: 'no-slash', httpHeaders: [{ name: 'Host', value: 'svc.example' }] } },
      { pod, container: c, containerId: 'c-1' },
      { timeoutSeconds: 5, podIP: localIP },
    );
    assert.deepEqual(out, { ok: true });
    assert.equal(lastSeen()?.url, '/no-slash');
    assert.equal(lastSeen()?.headers.host, 'svc.example');
  });

  it('counts any HTTP answer as success, as upstream does (only transport errors fail a hook)', async () => {
    replies.set('/broken', { status: 500 });
    const out = await runnerWith(noExec).run({ httpGet: { port, path: '/broken' } }, target, {
      timeoutSeconds: 5,
      podIP: localIP,
    });
    assert.deepEqual(out, { ok: true });
  });

  it('follows redirects on the same host only', async () => {
    replies.set('/a', { status: 302, location: '/b' });
    replies.set('/b', { status: 307, location: 'http://elsewhere.invalid/c' });
    const before = seen.length;
    const out = await runnerWith(noExec).run({ httpGet: { port, path: '/a' } }, target, {
      timeoutSeconds: 5,
      podIP: localIP,
    });
    assert.deepEqual(out, { ok: true });
    assert.deepEqual(
      seen.slice(before).map((s) => s.url),
      ['/a', '/b'],
    );
  });

  it('fails after ten redirects', async () => {
    replies.set('/loop', { status: 301, location: '/loop' });
    const out = await runnerWith(noExec).run({ httpGet: { port, path: '/loop' } }, target, {
      timeoutSeconds: 5,
      podIP: localIP,
    });
    assert.ok(!out.ok && out.message.includes('stopped after 10 redirects'), !out.ok ? out.message : '');
  });

  it('retries an HTTPS hook answered in plain HTTP over HTTP, without credentials, and records it', async () => {
    const recorder = createMemoryRecorder();
    const out = await runnerWith(noExec, { recorder }).run(
      {
        httpGet: {
          port,
          path: '/tls',
          scheme: 'HTTPS',
          httpHeaders: [
            { name: 'Authorization', value: 'Bearer x' },
            { name: 'X-Keep', value: 'yes' },
          ],
        },
      },
      target,
      { timeoutSeconds: 5, podIP: localIP },
    );
    assert.deepEqual(out, { ok: true });
    assert.equal(lastSeen()?.url, '/tls');
    assert.equal(lastSeen()?.headers.authorization, undefined);
    assert.equal(lastSeen()?.headers['x-keep'], 'yes');
    assert.deepEqual(
      recorder.events.map((e) => [e.type, e.reason]),
      [['Warning', 'LifecycleHTTPFallback']],
    );
  });

  it('fails with the URL and the transport error when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const out = await runnerWith(noExec).run({ httpGet: { port: deadPort, path: '/x' } }, target, {
      timeoutSeconds: 5,
      podIP: localIP,
    });
    assert.ok(!out.ok);
    assert.match(
      out.message,
      new RegExp(
        `^HTTP lifecycle hook \\(/x\\) for Container "main" in Pod "web_ns\\(u-1\\)" failed - error: Get "http://127.0.0.1:${deadPort}/x": .*ECONNREFUSED`,
      ),
    );
  });

  it('fails when the pod has no IP and the handler names no host', async () => {
    const out = await runnerWith(noExec).run({ httpGet: { port, path: '/' } }, target, {
      timeoutSeconds: 5,
      podIP: () => Promise.resolve(undefined),
    });
    assert.ok(!out.ok && out.message.includes('failed to find networking container'));
  });

  it('uses the handler host instead of the pod IP when one is given', async () => {
    let asked = false;
    const out = await runnerWith(noExec).run(
      { httpGet: { host: '127.0.0.1', port, path: '/host' } },
      target,
      {
        timeoutSeconds: 5,
        podIP: () => {
          asked = true;
          return Promise.resolve('10.0.0.1');
        },
      },
    );
    assert.deepEqual(out, { ok: true });
    assert.equal(asked, false);
    assert.equal(lastSeen()?.url, '/host');
  });
});

describe('sleep and unsupported hooks', () => {
  it('sleeps the given seconds on the injected clock', async () => {
    const slept: number[] = [];
    const hooks = runnerWith(noExec, {
      sleep: (ms) => {
        slept.push(ms);
        return Promise.resolve();
      },
    });
    const out = await hooks.run({ sleep: { seconds: 7 } }, target, { timeoutSeconds: 1, podIP: localIP });
    assert.deepEqual(out, { ok: true });
    assert.deepEqual(slept, [7000], 'a sleep is bounded by its own seconds, not by the exec/http budget');
  });

  it('reports a sleep cut short by the container going away', async () => {
    const ctrl = new AbortController();
    const hooks = runnerWith(noExec, {
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
          ctrl.abort();
        }),
    });
    const out = await hooks.run({ sleep: { seconds: 30 } }, target, {
      timeoutSeconds: 30,
      podIP: localIP,
      signal: ctrl.signal,
    });
    assert.ok(!out.ok);
    assert.equal(
      out.message,
      'Sleep lifecycle hook (30) for Container "main" in Pod "web_ns(u-1)" failed - error: container terminated before sleep hook finished',
    );
  });

  it('fails a tcpSocket handler, which the API keeps only for compatibility', async () => {
    const out = await runnerWith(noExec).run({ tcpSocket: { port: 80 } }, target, {
      timeoutSeconds: 5,
      podIP: localIP,
    });
    assert.ok(!out.ok && out.message.startsWith('Cannot run handler: invalid handler: tcpSocket'));
  });
});

describe('hook request building and budgets', () => {
  it('builds HTTPS and IPv6 URLs, and drops an Accept header set to empty', () => {
    const r = buildHttpGetRequest(
      {
        port: 8443,
        scheme: 'HTTPS',
        path: '/p',
        httpHeaders: [
          { name: 'Accept', value: '' },
          { name: 'User-Agent', value: 'mine' },
        ],
      },
      container,
      'fd00::5',
    );
    assert.equal(r.url.href, 'https://[fd00::5]:8443/p');
    assert.deepEqual(r.headers, { 'User-Agent': ['mine'] });
  });

  it('rejects a port name the container does not have, and out-of-range ports', () => {
    assert.throws(
      () => buildHttpGetRequest({ port: 'nope' }, container, '10.0.0.1'),
      /couldn't find port: nope/,
    );
    assert.throws(() => buildHttpGetRequest({ port: 70000 }, container, '10.0.0.1'), /invalid port number/);
  });

  it('gives postStart hooks at least 30 s, more when the pod asks for a longer grace period', () => {
    const withGrace = (g?: number): KubeletPod => ({
      ...pod,
      spec: { ...pod.spec, ...(g !== undefined && { terminationGracePeriodSeconds: g }) },
    });
    assert.equal(postStartTimeoutSeconds(withGrace()), 30);
    assert.equal(postStartTimeoutSeconds(withGrace(2)), 30);
    assert.equal(postStartTimeoutSeconds(withGrace(120)), 120);
  });

  it('takes the whole seconds a preStop hook used off the grace period, never below the minimum', () => {
    assert.equal(graceAfterPreStop(30, 1_900), 29);
    assert.equal(graceAfterPreStop(30, 0), 30);
    assert.equal(graceAfterPreStop(10, 9_000), 2);
    assert.equal(graceAfterPreStop(5, 60_000), 2);
  });

  it('restores an orphan container preStop handler and ports from its annotations', () => {
    const { container: c, problems } = restoreHookSpec('main', {
      'io.kubernetes.container.preStopHandler': JSON.stringify({ exec: { command: ['sh', '-c', 'x'] } }),
      'io.kubernetes.container.ports': JSON.stringify([{ name: 'http', containerPort: 80 }]),
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(c, {
      name: 'main',
      lifecycle: { preStop: { exec: { command: ['sh', '-c', 'x'] } } },
      ports: [{ name: 'http', containerPort: 80 }],
    });
  });

  it('reports malformed annotations instead of running a guessed handler', () => {
    const { container: c, problems } = restoreHookSpec('main', {
      'io.kubernetes.container.preStopHandler': '{"exec":{"command":"not-a-list"}}',
      'io.kubernetes.container.ports': '{oops',
    });
    assert.equal(c.lifecycle, undefined);
    assert.equal(c.ports, undefined);
    assert.equal(problems.length, 2);
  });
});
