// The validate stage (validate.ts). Upstream counterpart: pkg/kubelet/apis/config/validation/validation_test.go.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertInvalid, compileFields as compile } from './testing.ts';

describe('compileConfig validation', () => {
  it('reports every invalid value together, each naming its field or flag', () => {
    assertInvalid(
      () =>
        compile(
          {
            syncFrequency: '5x',
            fileCheckFrequency: '-1s',
            maxPods: -1,
            healthzPort: 70000,
            port: 65536,
            healthzBindAddress: 'localhost',
            staticPodURL: 'ftp://x/',
            staticPodURLHeader: { 'bad name': ['v'] },
            podLogsDir: '/var/log/../pods/',
          },
          { nodeIP: '10.0.0.1,10.0.0.2', httpCheckFrequency: '0s', verbosity: -1, logFormat: 'xml' },
        ),
      /syncFrequency: invalid duration "5x": unknown unit "x"/,
      /fileCheckFrequency: "-1s" must be greater than 0/,
      /--http-check-frequency: "0s" must be greater than 0/,
      /maxPods: -1 must not be a negative number/,
      /healthzPort: 70000/,
      /port: 65536/,
      /healthzBindAddress: "localhost" is not a valid IP/,
      /staticPodURL: "ftp:\/\/x\/" must be an http or https URL/,
      /staticPodURLHeader: "bad name" is not a valid HTTP header name/,
      /podLogsDir: .* must be normalized/,
      /--node-ip: .*one IPv4 and one IPv6/,
      /--v: -1/,
      /--logging-format: "xml"/,
    );
  });

  it('names the config file in the error when there is one', () => {
    assertInvalid(() => compile({ maxPods: -1 }), /\/etc\/kubernetes\/kubelet\.yaml/);
  });

  it('accepts a single node IP and a dual-stack pair', () => {
    assert.equal(compile(undefined, { nodeIP: '192.168.1.5' }).config.nodeIP, '192.168.1.5');
    assert.equal(compile(undefined, { nodeIP: '10.0.0.1,fd00::1' }).config.nodeIP, '10.0.0.1,fd00::1');
    assertInvalid(() => compile(undefined, { nodeIP: 'not-an-ip' }), /--node-ip/);
  });

  it('resolves a relative --root-dir against the working directory', () => {
    assert.equal(compile(undefined, { rootDir: 'state' }).config.rootDir, '/work/state');
  });
});
