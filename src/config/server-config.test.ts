import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { parseRunArgs } from '../cli/flags.ts';
import { compileConfig, decodeKubeletConfiguration, type FlagValues } from './kubelet-config.ts';

const opts = { hostname: () => 'node-a', cwd: '/work' };

function decode(fields: Record<string, unknown>, filePath = '/etc/kubernetes/kubelet.yaml') {
  return decodeKubeletConfiguration(
    { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...fields },
    filePath,
  );
}

function compile(fields: Record<string, unknown> | undefined, flags: FlagValues = {}) {
  return compileConfig(fields === undefined ? undefined : decode(fields), flags, opts);
}

function invalid(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(hasCode(err, 'InvalidArgument'), String(err));
    assert.match(String(err), pattern);
    return true;
  });
}

describe('kubelet API settings', () => {
  it('reads authentication and authorization from the file, with relative paths resolved', () => {
    const { config, warnings } = compile({
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true, cacheTTL: '30s' },
        x509: { clientCAFile: 'pki/ca.crt' },
      },
      authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '1m', cacheUnauthorizedTTL: '5s' } },
      tlsCertFile: 'pki/kubelet.crt',
      tlsPrivateKeyFile: '/abs/kubelet.key',
      tlsMinVersion: 'VersionTLS12',
      tlsCipherSuites: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256'],
    });
    assert.deepEqual(warnings, []);
    assert.deepEqual(config.server.authentication, {
      anonymous: false,
      webhook: true,
      webhookCacheTTLMs: 30_000,
      clientCAFile: '/etc/kubernetes/pki/ca.crt',
    });
    assert.deepEqual(config.server.authorization, {
      mode: 'Webhook',
      cacheAuthorizedTTLMs: 60_000,
      cacheUnauthorizedTTLMs: 5_000,
    });
    assert.equal(config.server.tlsCertFile, '/etc/kubernetes/pki/kubelet.crt');
    assert.equal(config.server.tlsPrivateKeyFile, '/abs/kubelet.key');
    assert.equal(config.server.tlsMinVersion, 'TLSv1.2');
    // TLS 1.3 suites are always on (as in Go): accepted, nothing to configure.
    assert.deepEqual(config.server.tlsCipherSuites, ['ECDHE-RSA-AES128-GCM-SHA256']);
  });

  it('takes insecure settings only when asked, and warns about each', async () => {
    const { config, warnings } = await parseRunArgs(
      ['--anonymous-auth', '--authorization-mode', 'AlwaysAllow', '--client-ca-file', '/ca.crt'],
      opts,
    );
    assert.equal(config.server.authentication.anonymous, true);
    assert.equal(config.server.authorization.mode, 'AlwaysAllow');
    assert.equal(config.server.authentication.clientCAFile, '/ca.crt');
    assert.equal(warnings.filter((w) => /anonymous requests are enabled/.test(w)).length, 1);
    assert.equal(warnings.filter((w) => /AlwaysAllow/.test(w)).length, 1);
  });

  it('warns when the read-only port is enabled (it was taken silently)', async () => {
    const { config, warnings } = await parseRunArgs(['--read-only-port', '10255'], opts);
    assert.equal(config.readOnlyPort, 10255);
    assert.deepEqual(warnings, [
      'kubelet API: the read-only port 10255 (--read-only-port / readOnlyPort) is enabled: ' +
        "unauthenticated, plain HTTP on 0.0.0.0; anyone who reaches it reads every pod's spec and " +
        "status (env values included) at /pods, and the node's stats and metrics",
    ]);
    assert.deepEqual(compile({}).warnings, []);
    // No listener without the API server: nothing to warn about.
    assert.deepEqual(compile({ readOnlyPort: 10255, enableServer: false }).warnings, []);
  });

  it('warns when the unauthenticated console listener is enabled (it was announced at info level)', async () => {
    const { config, warnings } = await parseRunArgs(['--console-address', '127.0.0.1:10260'], opts);
    assert.equal(config.consoleAddress, '127.0.0.1:10260');
    assert.deepEqual(warnings, [
      'node console: the console listener on 127.0.0.1:10260 (--console-address) is enabled: ' +
        "unauthenticated plain HTTP; every user and process on this node reads every pod's spec " +
        '(env values included) and container logs there',
    ]);
    // Not opened without the debugging handlers (the kubelet API warns about that at start).
    const off = await parseRunArgs(
      ['--console-address', '127.0.0.1:10260', '--enable-debugging-handlers=false'],
      opts,
    );
    assert.deepEqual(
      off.warnings.filter((w) => w.startsWith('node console:')),
      [],
    );
  });

  it('warns when healthz is bound to a non-loopback address (it was taken silently)', async () => {
    const { config, warnings } = await parseRunArgs(['--healthz-bind-address', '0.0.0.0'], opts);
    assert.equal(config.healthzBindAddress, '0.0.0.0');
    assert.deepEqual(warnings, [
      'healthz listener: 0.0.0.0 (--healthz-bind-address / healthzBindAddress) is not a loopback ' +
        'address: /healthz on port 10248 answers anyone who can reach it, unauthenticated plain HTTP, ' +
        'without the loopback Host check that refuses DNS rebinding',
    ]);
    for (const quiet of [{ healthzBindAddress: '127.0.0.2' }, { healthzBindAddress: '::1' }]) {
      assert.deepEqual(compile(quiet).warnings, [], JSON.stringify(quiet));
    }
    assert.deepEqual(compile({ healthzBindAddress: '10.0.0.1', healthzPort: 0 }).warnings, []);
  });

  it('lets flags override the file field by field', () => {
    const { config } = compileConfig(
      decode({ authentication: { webhook: { enabled: true } }, authorization: { mode: 'AlwaysAllow' } }),
      { server: { authenticationTokenWebhook: false, authorizationMode: 'Webhook' } },
      opts,
    );
    assert.equal(config.server.authentication.webhook, false);
    assert.equal(config.server.authorization.mode, 'Webhook');
  });

  it('parses the log rotation fields and flags', async () => {
    assert.equal(
      compile({ containerLogMaxSize: '1Mi', containerLogMaxFiles: 3 }).config.server.containerLogMaxSizeBytes,
      1 << 20,
    );
    const { config } = await parseRunArgs(
      ['--container-log-max-size=200Ki', '--container-log-max-files=2'],
      opts,
    );
    assert.equal(config.server.containerLogMaxSizeBytes, 200 * 1024);
    assert.equal(config.server.containerLogMaxFiles, 2);
  });

  it('refuses bad values, naming the field or flag', async () => {
    invalid(
      () => compile({ authorization: { mode: 'RBAC' } }),
      /authorization\.mode: "RBAC" is not supported/,
    );
    invalid(
      () => compile({ authentication: { anonymous: { enabled: 'yes' } } }),
      /authentication\.anonymous\.enabled/,
    );
    invalid(
      () => compile({ authentication: { anonymous: true } }),
      /field "authentication\.anonymous": expected an object/,
    );
    invalid(() => compile({ authentication: { oidc: {} } }), /unknown field "authentication\.oidc"/);
    invalid(
      () => compile({ authentication: { webhook: { cacheTTL: 'soon' } } }),
      /authentication\.webhook\.cacheTTL/,
    );
    invalid(() => compile({ tlsCertFile: '/a.crt' }), /must be given together/);
    invalid(() => compile({ tlsMinVersion: 'TLS1.2' }), /tlsMinVersion: "TLS1.2" is not a TLS version/);
    invalid(() => compile({ tlsCipherSuites: ['RC4'] }), /"RC4" is not a supported cipher suite/);
    invalid(() => compile({ containerLogMaxFiles: 1 }), /containerLogMaxFiles: 1 must be at least 2/);
    invalid(() => compile({ containerLogMaxSize: 'ten megs' }), /containerLogMaxSize/);
    await assert.rejects(
      parseRunArgs(['--authorization-mode', 'Node'], opts),
      /--authorization-mode: "Node"/,
    );
  });
});
