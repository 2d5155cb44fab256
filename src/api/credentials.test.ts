import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { chmod, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadServingCert } from '../server/serving-cert.ts';
import { makeTestPki, type TestPki } from '../server/testing.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiClient, type ApiClientOptions } from './client.ts';
import { ApiError, type ApiClient } from './client-types.ts';

interface Seen {
  cn: string | undefined;
  auth: string | undefined;
}

/**
 * An HTTPS API server on 127.0.0.1 that asks for a client certificate (signed by the test CA, but
 * not required), answers `/whoami` with the certificate's CN and the Authorization header, refuses
 * with 401 the bearer tokens in `rejected`, and holds watches open until the test writes to them.
 */
describe('API client credentials kept current', () => {
  let dir: string;
  let server: Server;
  let port: number;
  let pki: TestPki;
  const rejected = new Set<string>();
  const watches: { res: ServerResponse; seen: Seen }[] = [];
  const clients: ApiClient[] = [];
  /** The CN of every client connection still open. */
  const open = new Map<TLSSocket, string>();
  const openWith = (cn: string): number => [...open.values()].filter((c) => c === cn).length;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-creds-'));
    pki = await makeTestPki(dir);
    const serving = await loadServingCert({
      certDir: join(dir, 'pki'),
      nodeName: 'localhost',
      ips: ['127.0.0.1'],
      logger: nullLogger,
    });
    server = createServer(
      { cert: serving.cert, key: serving.key, requestCert: true, rejectUnauthorized: false, ca: pki.caCert },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        const cn = peer.subject?.CN;
        const seen: Seen = { cn: typeof cn === 'string' ? cn : undefined, auth: req.headers.authorization };
        const token = seen.auth?.replace(/^Bearer /, '');
        if (token !== undefined && rejected.has(token)) {
          res.writeHead(401, { 'Content-Type': 'application/json' });
          res.end('{"kind":"Status","reason":"Unauthorized","message":"Unauthorized"}');
          return;
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        if (req.url?.includes('watch=1')) {
          res.flushHeaders();
          watches.push({ res, seen });
          return;
        }
        res.end(JSON.stringify(seen));
      },
    );
    server.on('secureConnection', (sock: TLSSocket) => {
      const cn = sock.getPeerCertificate().subject?.CN;
      open.set(sock, typeof cn === 'string' ? cn : '');
      sock.on('close', () => open.delete(sock));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    for (const c of clients) c.close();
    for (const w of watches) w.res.end();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  });

  async function client(name: string, user: Record<string, unknown>, opts: Partial<ApiClientOptions> = {}) {
    const kubeconfig = join(dir, `${name}.kubeconfig`);
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'u', user }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const api = await createApiClient({ kubeconfig, qps: 0, burst: 0, ...opts });
    clients.push(api);
    return api;
  }

  const whoami = (api: ApiClient) => api.request<Seen>({ method: 'GET', path: '/whoami' });

  /** kubelet-client-current.pem as the certificate manager leaves it: cert and key in one file. */
  async function writePair(file: string, pair: { cert: Buffer; key: Buffer }): Promise<void> {
    await writeFile(file, Buffer.concat([pair.cert, pair.key]), { mode: 0o600 });
  }

  /** Points `link` at `target` atomically (a new symlink renamed over the old), as upstream's store. */
  async function swapLink(link: string, target: string): Promise<void> {
    await symlink(target, `${link}.tmp`);
    await rename(`${link}.tmp`, link);
  }

  it('authenticates with an exec plugin token and runs the plugin again when the API server answers 401', async () => {
    const plugin = join(dir, 'token-plugin');
    await writeFile(
      plugin,
      [
        '#!/bin/sh',
        `n=$(cat "${dir}/token-plugin.runs" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${dir}/token-plugin.runs"`,
        `printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"exec-%s"}}' "$n"`,
      ].join('\n'),
    );
    await chmod(plugin, 0o755);
    const api = await client('exec', {
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' },
    });
    assert.equal((await whoami(api)).auth, 'Bearer exec-1');
    assert.equal((await whoami(api)).auth, 'Bearer exec-1', 'no expiry: cached');
    rejected.add('exec-1');
    await assert.rejects(whoami(api), (err: unknown) => err instanceof ApiError && err.status === 401);
    assert.equal((await whoami(api)).auth, 'Bearer exec-2');
    assert.equal((await readFile(join(dir, 'token-plugin.runs'), 'utf8')).trim(), '2');
  });

  it("shares one exec plugin run between the kubelet's two clients of one kubeconfig", async () => {
    const plugin = join(dir, 'shared-plugin');
    await writeFile(
      plugin,
      [
        '#!/bin/sh',
        `n=$(cat "${dir}/shared-plugin.runs" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${dir}/shared-plugin.runs"`,
        `printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"shared-%s"}}' "$n"`,
      ].join('\n'),
    );
    await chmod(plugin, 0o755);
    const user = { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: plugin } };
    const api = await client('shared', user);
    const leaseApi = await client('shared', user);
    const [a, b] = await Promise.all([whoami(api), whoami(leaseApi)]);
    assert.equal(a.auth, 'Bearer shared-1');
    assert.equal(b.auth, 'Bearer shared-1');
    assert.equal((await readFile(join(dir, 'shared-plugin.runs'), 'utf8')).trim(), '1');
  });

  it('fails a request with the exec plugin error when the plugin is missing', async () => {
    const api = await client('exec-missing', {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: join(dir, 'not-installed'),
        installHint: 'see the node image docs',
      },
    });
    await assert.rejects(
      whoami(api),
      /getting credentials: exec: executable .*not-installed not found[^]*see the node image docs/,
    );
  });

  it('re-reads a token file after a 401 and on reloadCredentials(), not before its period', async () => {
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'file-a\n');
    const api = await client('token-file', { tokenFile });
    assert.equal((await whoami(api)).auth, 'Bearer file-a');
    await writeFile(tokenFile, 'file-b\n');
    assert.equal((await whoami(api)).auth, 'Bearer file-a', 'cached for the token source period');
    rejected.add('file-a');
    await assert.rejects(whoami(api), (err: unknown) => err instanceof ApiError && err.status === 401);
    assert.equal((await whoami(api)).auth, 'Bearer file-b');
    await writeFile(tokenFile, 'file-c\n');
    assert.equal(await api.reloadCredentials(), false, 'the certificate did not change');
    assert.equal((await whoami(api)).auth, 'Bearer file-c');
  });

  it('switches to a rotated client certificate on reloadCredentials() without dropping an open watch', async () => {
    const a = await pki.client('system:node:a', ['system:nodes']);
    const b = await pki.client('system:node:b', ['system:nodes']);
    await writePair(join(dir, 'kubelet-client-a.pem'), a);
    await writePair(join(dir, 'kubelet-client-b.pem'), b);
    const current = join(dir, 'kubelet-client-current.pem');
    await swapLink(current, join(dir, 'kubelet-client-a.pem'));
    // A long check period: only reloadCredentials() can see the change in this test.
    const api = await client(
      'cert',
      { 'client-certificate': current, 'client-key': current },
      { certCheckPeriodMs: 3_600_000 },
    );
    assert.equal((await whoami(api)).cn, 'system:node:a');

    const events: unknown[] = [];
    const before = watches.length;
    const watching = api
      .watch('/api/v1/pods', {}, (e) => events.push(e.object), { signal: new AbortController().signal })
      .then(
        () => 'ended',
        (err: unknown) => err,
      );
    while (watches.length === before) await new Promise((r) => setTimeout(r, 10));
    const watch = watches[watches.length - 1]!;
    assert.equal(watch.seen.cn, 'system:node:a');

    // The watch took the first connection; this request opens a second one, idle afterwards.
    assert.equal((await whoami(api)).cn, 'system:node:a');
    assert.equal(openWith('system:node:a'), 2, 'the watch and an idle keep-alive connection');

    await swapLink(current, join(dir, 'kubelet-client-b.pem'));
    assert.equal(await api.reloadCredentials(), true);
    assert.equal((await whoami(api)).cn, 'system:node:b');
    const deadline = Date.now() + 5_000;
    while (openWith('system:node:a') !== 1) {
      assert.ok(Date.now() < deadline, 'the idle connection of the old certificate was not closed');
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(await api.reloadCredentials(), false, 'nothing changed since');

    // The watch made with the old certificate still delivers.
    watch.res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p1' } } })}\n`);
    watch.res.end();
    assert.equal(await watching, 'ended', 'the watch ended when the server ended it, not before');
    assert.deepEqual(events, [{ metadata: { name: 'p1' } }]);
  });

  it('picks up a rotated certificate file by itself within the check period', async () => {
    const a = await pki.client('periodic-a', []);
    const b = await pki.client('periodic-b', []);
    await writePair(join(dir, 'periodic-a.pem'), a);
    await writePair(join(dir, 'periodic-b.pem'), b);
    const current = join(dir, 'periodic-current.pem');
    await swapLink(current, join(dir, 'periodic-a.pem'));
    const api = await client(
      'periodic',
      { 'client-certificate': current, 'client-key': current },
      { certCheckPeriodMs: 50 },
    );
    assert.equal((await whoami(api)).cn, 'periodic-a');
    await swapLink(current, join(dir, 'periodic-b.pem'));
    const deadline = Date.now() + 5_000;
    while ((await whoami(api)).cn !== 'periodic-b') {
      assert.ok(Date.now() < deadline, 'the new certificate was not picked up');
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  it('keeps the working certificate when the files on disk do not make a pair', async () => {
    const a = await pki.client('pair-a', []);
    const b = await pki.client('pair-b', []);
    const certFile = join(dir, 'pair.crt');
    const keyFile = join(dir, 'pair.key');
    await writeFile(certFile, a.cert);
    await writeFile(keyFile, a.key);
    const api = await client(
      'pair',
      { 'client-certificate': certFile, 'client-key': keyFile },
      { certCheckPeriodMs: 3_600_000 },
    );
    await writeFile(certFile, b.cert); // the key not yet written: a rotation caught half way
    assert.equal(await api.reloadCredentials(), false);
    assert.equal((await whoami(api)).cn, 'pair-a');
    await writeFile(keyFile, b.key);
    assert.equal(await api.reloadCredentials(), true);
    assert.equal((await whoami(api)).cn, 'pair-b');
  });
});
