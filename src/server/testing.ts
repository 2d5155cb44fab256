/**
 * Test helpers for the kubelet API (not exported from the index): certificates made with openssl
 * in a temporary directory, an HTTPS client that presents them, and a fake host.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeletPod } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiHandlers, type ConsoleHandler } from './api-handlers.ts';
import { createAuthenticator, type Authenticator } from './auth/authenticator.ts';
import { createAlwaysAllowAuthorizer, type Authorizer } from './auth/authorizer.ts';
import type { HostPod, KubeletApiHost } from './host.ts';
import { createKubeletServer, type KubeletServer } from './kubelet-server.ts';
import { loadServingCert, makeSelfSignedPair, NEW_EC_KEY } from './serving-cert.ts';
import { buildPod } from '../../test/kit/pod.ts';

const run = promisify(execFile);

export interface TestPki {
  caCert: Buffer;
  /** Signed by the CA: CN=`name`, O=`groups`. */
  client(name: string, groups: string[]): Promise<{ cert: Buffer; key: Buffer }>;
}

export async function makeTestPki(dir: string, caName = 'test-ca'): Promise<TestPki> {
  const caKey = join(dir, `${caName}.key`);
  const caCrt = join(dir, `${caName}.crt`);
  await makeSelfSignedPair({ keyFile: caKey, certFile: caCrt, subject: `/CN=${caName}`, days: 2 });
  let n = 0;
  return {
    caCert: await readFile(caCrt),
    async client(name, groups) {
      const base = join(dir, `${caName}-client-${n++}`);
      const subj = [...groups.map((g) => `/O=${g}`), `/CN=${name}`].join('');
      await run('openssl', [
        'req',
        '-new',
        ...NEW_EC_KEY,
        '-keyout',
        `${base}.key`,
        '-out',
        `${base}.csr`,
        '-subj',
        subj,
      ]);
      await run('bash', [
        '-c',
        `openssl x509 -req -in ${base}.csr -CA ${caCrt} -CAkey ${caKey} -CAcreateserial -days 2 -out ${base}.crt ` +
          `-extfile <(printf 'extendedKeyUsage=clientAuth')`,
      ]);
      return { cert: await readFile(`${base}.crt`), key: await readFile(`${base}.key`) };
    },
  };
}

export interface TestResponse {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

export function get(
  port: number,
  path: string,
  opts: {
    method?: string;
    token?: string;
    cert?: { cert: Buffer; key: Buffer };
    headers?: Record<string, string>;
  } = {},
): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        rejectUnauthorized: false,
        ...(opts.cert ? { cert: opts.cert.cert, key: opts.cert.key } : {}),
        headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export function testPod(
  namespace: string,
  name: string,
  uid: string,
  containers: string[] = ['c'],
): KubeletPod {
  return buildPod(name, { namespace, uid, containers, image: 'busybox' });
}

/** A host over a fixed pod list; every runtime-facing function can be replaced per test. */
export function fakeHost(pods: HostPod[], overrides: Partial<KubeletApiHost> = {}): KubeletApiHost {
  const fail = (what: string) => () => Promise.reject(new Error(`fake host: ${what} not scripted`));
  return {
    nodeName: 'node-1',
    healthz: () => ({ ok: true, message: 'ok' }),
    pods: () => pods,
    getPod: (ns, name) => pods.find((p) => p.pod.metadata.namespace === ns && p.pod.metadata.name === name),
    runningPods: () => Promise.resolve(pods.map((p) => p.pod)),
    findRunningContainer: () => Promise.resolve(undefined),
    findReadySandbox: () => Promise.resolve(undefined),
    containerLogPath: fail('containerLogPath'),
    isContainerRunning: () => Promise.resolve(false),
    runtime: {
      exec: fail('exec'),
      attach: fail('attach'),
      portForward: fail('portForward'),
      execSync: fail('execSync'),
    },
    configz: () => ({ kind: 'KubeletConfiguration' }),
    spec: () => Promise.resolve({ num_cores: 2 }),
    metrics: () =>
      Promise.resolve({ contentType: 'text/plain; version=0.0.4', body: 'kubelet_running_pods 1\n' }),
    statsSummary: () => Promise.resolve({ node: { nodeName: 'node-1' }, pods: [] }),
    systemLogDir: '/nonexistent',
    podWhy: () => Promise.resolve(undefined),
    podTimeline: () => undefined,
    ...overrides,
  };
}

export interface TestServerOptions {
  /** Default: on. */
  enableDebuggingHandlers?: boolean;
  /** Default: anonymous requests, no client certificates. */
  authenticator?: Authenticator;
  /** Default: AlwaysAllow. */
  authorizer?: Authorizer;
  /** The CA client certificates are verified against (x509 authentication); default: none asked. */
  clientCA?: Buffer;
  /** The IPs the self-signed serving certificate names; default: none. */
  ips?: string[];
  /** The plain-HTTP read-only listener's port; default 0 (none). */
  readOnlyPort?: number;
  /** The node console's routes; default: none (404). */
  console?: ConsoleHandler;
}

/** A kubelet API on a free loopback port over `host`, its serving certificate made in `certDir`. */
export async function startTestServer(
  host: KubeletApiHost,
  certDir: string,
  opts: TestServerOptions = {},
): Promise<{ server: KubeletServer; port: number }> {
  const cert = await loadServingCert({
    certDir: join(certDir, 'pki'),
    nodeName: 'n',
    ips: opts.ips ?? [],
    logger: nullLogger,
  });
  const server = createKubeletServer({
    address: '127.0.0.1',
    port: 0,
    readOnlyPort: opts.readOnlyPort ?? 0,
    tls: opts.clientCA ? { ...cert, clientCA: opts.clientCA } : cert,
    nodeName: 'n',
    authenticator: opts.authenticator ?? createAuthenticator({ anonymous: true, x509: false }),
    authorizer: opts.authorizer ?? createAlwaysAllowAuthorizer(),
    handlers: createApiHandlers({
      host,
      enableDebuggingHandlers: opts.enableDebuggingHandlers ?? true,
      enableSystemLogHandler: false,
      streamingIdleTimeoutMs: 1000,
      logger: nullLogger,
      ...(opts.console ? { console: opts.console } : {}),
    }),
    logger: nullLogger,
  });
  await server.start();
  return { server, port: server.ports().secure };
}

/** An open (anonymous + AlwaysAllow) kubelet API on a free loopback port, over `host`. */
export const startOpenServer = (host: KubeletApiHost, certDir: string) => startTestServer(host, certDir);
