/**
 * Fuzzed surface `kubelet-api`: raw requests to the kubelet API (src/server: the HTTPS listener with
 * authentication and authorization, the plain-HTTP read-only port, every handler) in-process on
 * 127.0.0.1, over a fake host whose runtime answers (pods with running and exited containers, a
 * CRI log file, a streaming server that accepts upgrades). Requests are written as bytes, so
 * anything goes: any method, paths over every route with odd segments and percent-encodings
 * (malformed ones too), absolute-form and `*` targets, query strings with bad numbers and times,
 * random and huge headers, upgrade requests, bodies that do not match their length.
 *
 * Per case: a 5xx, or the connection closed with no answer at all, is a crash (the fake host never
 * fails, so nothing here is the runtime's fault); so is an uncaught exception in the process. A
 * 4xx must say something (Node's own parser refusals say it in the status line); a refusal of a
 * bad query parameter must name the parameter. Every 25 cases the server must still answer
 * /healthz.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { KubeletPod, PodStatus } from '../../../src/api/types.ts';
import { createApiHandlers } from '../../../src/server/api-handlers.ts';
import { createAuthenticator } from '../../../src/server/auth/authenticator.ts';
import { createAlwaysAllowAuthorizer } from '../../../src/server/auth/authorizer.ts';
import type { HostPod, KubeletApiHost } from '../../../src/server/host.ts';
import { createKubeletServer } from '../../../src/server/kubelet-server.ts';
import { loadServingCert } from '../../../src/server/serving-cert.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import type { FuzzSurface } from '../scenario.ts';
import { runSurface, type Verdict } from './harness.ts';
import { buildPod } from '../../kit/pod.ts';

import { kubeletApiArbitrary, PODS, type ApiInput } from './kubelet-api-requests.ts';

function status(containers: string[]): PodStatus {
  return {
    phase: 'Running',
    containerStatuses: containers.map((name, i) => ({
      name,
      ready: true,
      restartCount: i,
      image: 'busybox:1.29',
      imageID: 'sha256:0',
      containerID: `containerd://${name}-id`,
      state:
        i === 0
          ? { running: { startedAt: '2026-11-24T00:00:00Z' } }
          : { terminated: { exitCode: 1, containerID: `containerd://${name}-id` } },
      lastState: { terminated: { exitCode: 2, containerID: `containerd://${name}-old` } },
    })),
  };
}

function hostPods(): HostPod[] {
  return PODS.map((p) => {
    const pod: KubeletPod = buildPod(p.name, {
      namespace: p.ns,
      uid: p.uid,
      ...(p.static ? { annotations: { 'kubernetes.io/config.source': 'file' } } : {}),
      containers: p.containers.map((name) => ({ name, tty: name === 'app' })),
    });
    return { pod, status: status(p.containers) };
  });
}

/** A host that answers everything a well-formed request can ask. */
function answeringHost(logFile: string, logDir: string, streamURL: string): KubeletApiHost {
  const pods = hostPods();
  return {
    nodeName: 'fuzz-node',
    healthz: () => ({ ok: true, message: 'ok' }),
    pods: () => pods,
    getPod: (ns, name) => pods.find((p) => p.pod.metadata.namespace === ns && p.pod.metadata.name === name),
    runningPods: () => Promise.resolve(pods.map((p) => p.pod)),
    findRunningContainer: (pod, name) =>
      Promise.resolve(pod.spec.containers.some((c) => c.name === name) ? `${name}-id` : undefined),
    findReadySandbox: (pod) => Promise.resolve(`${pod.metadata.uid}-sandbox`),
    containerLogPath: () => Promise.resolve(logFile),
    isContainerRunning: () => Promise.resolve(false),
    runtime: {
      exec: () => Promise.resolve(streamURL),
      attach: () => Promise.resolve(streamURL),
      portForward: () => Promise.resolve(streamURL),
      execSync: (_id, cmd) =>
        Promise.resolve({ stdout: Buffer.from(cmd.join(' ')), stderr: Buffer.alloc(0), exitCode: 0 }),
    },
    configz: () => ({ kind: 'KubeletConfiguration' }),
    spec: () => Promise.resolve({ num_cores: 2 }),
    metrics: () =>
      Promise.resolve({ contentType: 'text/plain; version=0.0.4', body: 'kubelet_running_pods 2\n' }),
    statsSummary: () => Promise.resolve({ node: { nodeName: 'fuzz-node' }, pods: [] }),
    systemLogDir: logDir,
    podWhy: () => Promise.resolve(undefined),
    podTimeline: () => undefined,
  };
}

// ---- one request -------------------------------------------------------------------------------

interface Answer {
  statusLine: string;
  body: string;
  bytes: number;
}

function send(
  port: number,
  raw: string,
  tls: boolean,
  signal: AbortSignal,
): Promise<Answer | { error: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const done = (v: Answer | { error: string }) => {
      if (settled) return;
      settled = true;
      sock.destroy();
      resolve(v);
    };
    const onConnect = () => sock.write(raw);
    const sock: Socket = tls
      ? tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, onConnect)
      : createConnection({ host: '127.0.0.1', port }, onConnect);
    sock.on('data', (d: Buffer) => chunks.push(d));
    // The server may reset after answering (unread body): what arrived is the answer.
    sock.on('error', (err) => (chunks.length > 0 ? finish() : done({ error: err.message })));
    sock.on('close', () => finish());
    signal.addEventListener('abort', () => done({ error: 'aborted' }), { once: true });
    function finish(): void {
      const all = Buffer.concat(chunks).toString('latin1');
      const end = all.indexOf('\r\n\r\n');
      done({
        statusLine: all.slice(0, all.indexOf('\r\n') >= 0 ? all.indexOf('\r\n') : all.length),
        body: end >= 0 ? all.slice(end + 4) : '',
        bytes: all.length,
      });
    }
  });
}

async function healthy(port: number): Promise<boolean> {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), 2_000);
  const a = await send(
    port,
    'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    true,
    ac.signal,
  );
  clearTimeout(t);
  return 'statusLine' in a && a.statusLine.startsWith('HTTP/1.1 200');
}

export const kubeletApiSurface: FuzzSurface = {
  id: 'kubelet-api',
  title:
    'Kubelet API requests as raw bytes (methods, paths, encodings, queries, headers, bodies, upgrades; HTTPS and read-only port)',
  async run(opts) {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-fuzz-api-'));
    const logDir = join(dir, 'varlog');
    await mkdir(join(logDir, 'sub'), { recursive: true });
    await writeFile(join(logDir, 'syslog'), 'hello\n');
    const logFile = join(dir, 'container.log');
    await writeFile(
      logFile,
      Array.from(
        { length: 50 },
        (_, i) => `2026-11-24T00:00:${String(i % 60).padStart(2, '0')}.000000000Z stdout F line ${i}\n`,
      ).join(''),
    );
    // A stand-in for the runtime's streaming server: accepts the upgrade, then hangs up.
    const streaming = createNetServer((s) => {
      s.on('error', () => undefined);
      s.once('data', () =>
        s.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n'),
      );
    });
    await new Promise<void>((r) => streaming.listen(0, '127.0.0.1', r));
    const streamPort = (streaming.address() as { port: number }).port;
    const readOnlyPort = await new Promise<number>((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const server = createKubeletServer({
      address: '127.0.0.1',
      port: 0,
      readOnlyPort,
      tls: await loadServingCert({
        certDir: join(dir, 'pki'),
        nodeName: 'fuzz-node',
        ips: ['127.0.0.1'],
        logger: nullLogger,
      }),
      nodeName: 'fuzz-node',
      authenticator: createAuthenticator({ anonymous: true, x509: false }),
      authorizer: createAlwaysAllowAuthorizer(),
      handlers: createApiHandlers({
        host: answeringHost(logFile, logDir, `http://127.0.0.1:${streamPort}/stream/1`),
        enableDebuggingHandlers: true,
        enableSystemLogHandler: true,
        streamingIdleTimeoutMs: 1_000,
        logger: nullLogger,
      }),
      logger: nullLogger,
    });
    await server.start();
    const port = server.ports().secure;
    let n = 0;
    try {
      return await runSurface<ApiInput>(
        {
          id: 'kubelet-api',
          arbitrary: kubeletApiArbitrary,
          caseTimeoutMs: 2_000,
          async exec(input, signal): Promise<Verdict> {
            const a = await send(input.readOnly ? readOnlyPort : port, input.raw, !input.readOnly, signal);
            if (++n % 25 === 0 && !(await healthy(port))) {
              return { kind: 'crash', detail: 'the server stopped answering /healthz after this request' };
            }
            if ('error' in a) return { kind: 'crash', detail: `no answer: ${a.error}` };
            if (a.bytes === 0) return { kind: 'crash', detail: 'the connection closed without an answer' };
            const code = Number(/^HTTP\/1\.[01] (\d{3})/.exec(a.statusLine)?.[1] ?? NaN);
            if (!Number.isFinite(code))
              return { kind: 'crash', detail: `not an HTTP answer: ${a.statusLine.slice(0, 80)}` };
            if (code >= 500) return { kind: 'crash', detail: `${a.statusLine}: ${a.body.slice(0, 200)}` };
            const message = `${a.statusLine} ${a.body}`.trim();
            // A parameter refused for its value ("unable to decode query: tailLines: …") names it.
            if (
              code === 400 &&
              /unable to decode query|Invalid value|must be|cannot be empty|as a port/.test(a.body)
            ) {
              if (!input.params.some((p) => a.body.includes(p))) {
                return {
                  kind: 'unclear',
                  why: `a parameter refusal that names none of ${input.params.join(', ')}: ${a.body.slice(0, 200)}`,
                };
              }
            }
            if (code >= 400) return { kind: 'rejected', message };
            return { kind: 'accepted' };
          },
        },
        opts,
      );
    } finally {
      await server.close();
      await new Promise<void>((r) => streaming.close(() => r()));
      await rm(dir, { recursive: true, force: true });
    }
  },
};
