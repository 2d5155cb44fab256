import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeSelfSignedPair } from '../server/serving-cert.ts';
import { KubeletError } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { createExecAuthenticator, type ExecAuthenticatorDeps } from './exec-credential.ts';
import type { ExecConfig } from './kubeconfig.ts';

const V1 = 'client.authentication.k8s.io/v1';
const V1BETA1 = 'client.authentication.k8s.io/v1beta1';

/**
 * Writes an executable node script: `body` runs with `dir` (the temp dir), `runs` (this run's
 * number, counted in a file) and `info` (KUBERNETES_EXEC_INFO parsed) in scope.
 */
async function plugin(dir: string, name: string, body: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(
    file,
    [
      `#!${process.execPath}`,
      `const fs = require('node:fs'); const path = require('node:path');`,
      `const dir = ${JSON.stringify(dir)}; const countFile = path.join(dir, ${JSON.stringify(`${name}.runs`)});`,
      `const runs = (fs.existsSync(countFile) ? Number(fs.readFileSync(countFile, 'utf8')) : 0) + 1;`,
      `fs.writeFileSync(countFile, String(runs));`,
      `const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO || 'null');`,
      body,
    ].join('\n'),
  );
  await chmod(file, 0o755);
  // CommonJS: the script has no package.json of its own beside it.
  await writeFile(join(dir, 'package.json'), '{"type":"commonjs"}');
  return file;
}

async function runs(dir: string, name: string): Promise<number> {
  return Number(await readFile(join(dir, `${name}.runs`), 'utf8').catch(() => '0'));
}

function config(command: string, over: Partial<ExecConfig> = {}): ExecConfig {
  return {
    command,
    args: [],
    env: [],
    apiVersion: V1,
    provideClusterInfo: false,
    interactiveMode: 'Never',
    ...over,
  };
}

describe('exec credential plugins', () => {
  let dir: string;
  let now = Date.parse('2026-11-28T12:00:00Z');
  const deps: ExecAuthenticatorDeps = { logger: nullLogger, now: () => now, timeoutMs: 10_000 };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'exec-cred-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('runs the plugin with its args, its env and KUBERNETES_EXEC_INFO, and takes its token', async () => {
    const cmd = await plugin(
      dir,
      'echo-info',
      `fs.writeFileSync(path.join(dir, 'seen.json'), JSON.stringify({ info, args: process.argv.slice(2), env: process.env.PLUGIN_ENV }));
       process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: info.apiVersion, status: { token: 'tok-' + runs } }));`,
    );
    const a = createExecAuthenticator(
      config(cmd, {
        apiVersion: V1BETA1,
        interactiveMode: 'IfAvailable',
        args: ['get-token', '--cluster', 'c1'],
        env: [{ name: 'PLUGIN_ENV', value: 'from-kubeconfig' }],
        provideClusterInfo: true,
        cluster: {
          server: 'https://10.0.0.1:6443',
          'certificate-authority-data': 'Q0E=',
          config: { audience: 'x' },
        },
      }),
      deps,
    );
    const c = await a.get();
    assert.equal(c.token, 'tok-1');
    assert.equal(c.expiresAtMs, undefined);
    const seen = JSON.parse(await readFile(join(dir, 'seen.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(seen, {
      info: {
        kind: 'ExecCredential',
        apiVersion: V1BETA1,
        spec: {
          interactive: false,
          cluster: {
            server: 'https://10.0.0.1:6443',
            'certificate-authority-data': 'Q0E=',
            config: { audience: 'x' },
          },
        },
      },
      args: ['get-token', '--cluster', 'c1'],
      env: 'from-kubeconfig',
    });
  });

  it('keeps the credentials until their expirationTimestamp, then runs the plugin again', async () => {
    const cmd = await plugin(
      dir,
      'expiring',
      `process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: '${V1}',
         status: { token: 'tok-' + runs, expirationTimestamp: '2026-11-28T12:10:00Z' } }));`,
    );
    const a = createExecAuthenticator(config(cmd), deps);
    now = Date.parse('2026-11-28T12:00:00Z');
    const [c1, c2] = await Promise.all([a.get(), a.get()]);
    assert.equal(c1.token, 'tok-1');
    assert.equal(c2, c1, 'concurrent callers share one run');
    now = Date.parse('2026-11-28T12:09:59Z');
    assert.equal((await a.get()).token, 'tok-1');
    assert.equal(await runs(dir, 'expiring'), 1);
    now = Date.parse('2026-11-28T12:10:01Z');
    assert.equal((await a.get()).token, 'tok-2');
    assert.equal(await runs(dir, 'expiring'), 2);
  });

  it('runs the plugin again after a 401, once, and not for credentials already replaced', async () => {
    const cmd = await plugin(
      dir,
      'refresh',
      `process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: '${V1}', status: { token: 'tok-' + runs } }));`,
    );
    const a = createExecAuthenticator(config(cmd), deps);
    const first = await a.get();
    a.unauthorized(first);
    a.unauthorized(first); // a second request that saw the same 401
    const second = await a.get();
    assert.equal(second.token, 'tok-2');
    a.unauthorized(first); // a late 401 for the old token: already replaced
    assert.equal((await a.get()).token, 'tok-2');
    assert.equal(await runs(dir, 'refresh'), 2);
  });

  it('refuses an ExecCredential of another API version than configured (v1 vs v1beta1)', async () => {
    const cmd = await plugin(
      dir,
      'old-version',
      `process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: '${V1BETA1}', status: { token: 't' } }));`,
    );
    await assert.rejects(createExecAuthenticator(config(cmd), deps).get(), (err: unknown) => {
      assert.ok(err instanceof KubeletError);
      assert.equal(err.code, 'Unauthenticated');
      assert.match(
        err.message,
        /exec plugin is configured to use API version client\.authentication\.k8s\.io\/v1, plugin returned version client\.authentication\.k8s\.io\/v1beta1/,
      );
      return true;
    });
    const ok = createExecAuthenticator(config(cmd, { apiVersion: V1BETA1 }), deps);
    assert.equal((await ok.get()).token, 't');
  });

  it('names a missing plugin and shows its install hint', async () => {
    const a = createExecAuthenticator(
      config(join(dir, 'no-such-plugin'), { installHint: 'apt-get install example-auth-plugin' }),
      deps,
    );
    await assert.rejects(a.get(), (err: unknown) => {
      assert.ok(err instanceof KubeletError);
      assert.match(err.message, /exec: executable .*no-such-plugin not found/);
      assert.match(err.message, /client-go credential plugin that is not installed/);
      assert.match(err.message, /apt-get install example-auth-plugin/);
      return true;
    });
  });

  it("puts a failed plugin's exit code and stderr in the error", async () => {
    const cmd = await plugin(
      dir,
      'failing',
      `process.stderr.write('error: token endpoint said 403\\n'); process.exit(3);`,
    );
    await assert.rejects(
      createExecAuthenticator(config(cmd), deps).get(),
      /exec: executable .*failing failed with exit code 3; stderr: error: token endpoint said 403/,
    );
  });

  it('gives up on a plugin that does not finish in time', async () => {
    const cmd = await plugin(
      dir,
      'hanging',
      `process.stderr.write('waiting for the browser'); setTimeout(() => {}, 60_000);`,
    );
    const t0 = Date.now();
    await assert.rejects(
      createExecAuthenticator(config(cmd), { ...deps, timeoutMs: 500 }).get(),
      /did not finish within 0\.5s; stderr: waiting for the browser/,
    );
    assert.ok(Date.now() - t0 < 5_000);
  });

  it('refuses output without a status, without credentials, or with half a key pair', async () => {
    const cases: [string, string, RegExp][] = [
      ['no-status', `{}`, /didn't return a status field/],
      ['empty-status', `{ status: {} }`, /didn't return a token or cert\/key pair/],
      [
        'half-pair',
        `{ status: { clientCertificateData: 'x' } }`,
        /returned only certificate or key, not both/,
      ],
      [
        'bad-pair',
        `{ status: { clientCertificateData: 'x', clientKeyData: 'y' } }`,
        /failed parsing client key\/certificate/,
      ],
    ];
    for (const [name, extra, want] of cases) {
      const cmd = await plugin(
        dir,
        name,
        `process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: '${V1}', ...${extra} }));`,
      );
      await assert.rejects(createExecAuthenticator(config(cmd), deps).get(), want, name);
    }
    const garbage = await plugin(dir, 'garbage', `process.stdout.write('{not json');`);
    await assert.rejects(createExecAuthenticator(config(garbage), deps).get(), /decoding stdout/);
  });

  it('refuses interactiveMode Always: the kubelet gives a plugin no terminal', async () => {
    const cmd = await plugin(dir, 'interactive', `process.exit(0);`);
    await assert.rejects(
      createExecAuthenticator(config(cmd, { interactiveMode: 'Always' }), deps).get(),
      /exec plugin cannot support interactive mode: standard input is not a terminal/,
    );
    assert.equal(await runs(dir, 'interactive'), 0);
  });

  it('takes a client certificate and key from the plugin', async () => {
    await makeSelfSignedPair({
      keyFile: join(dir, 'plugin.key'),
      certFile: join(dir, 'plugin.crt'),
      subject: '/CN=system:node:n1',
      days: 1,
    });
    const cmd = await plugin(
      dir,
      'cert',
      `process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: '${V1}', status: {
         clientCertificateData: fs.readFileSync(path.join(dir, 'plugin.crt'), 'utf8'),
         clientKeyData: fs.readFileSync(path.join(dir, 'plugin.key'), 'utf8') } }));`,
    );
    const c = await createExecAuthenticator(config(cmd), deps).get();
    assert.equal(c.token, undefined);
    assert.deepEqual(c.cert, await readFile(join(dir, 'plugin.crt')));
    assert.deepEqual(c.key, await readFile(join(dir, 'plugin.key')));
  });
});
