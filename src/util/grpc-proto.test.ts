import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { hasCode } from './errors.ts';
import { protoPackage } from './grpc-proto.ts';

const HEALTH = path.join(import.meta.dirname, '..', 'prober', 'health.proto');

describe('protoPackage', () => {
  it('parses the protos once, on first use, and finds a service method', () => {
    const pkg = protoPackage([HEALTH], { keepCase: true });
    assert.equal(pkg.definition(), pkg.definition());
    assert.equal(pkg.method('grpc.health.v1.Health', 'Check').path, '/grpc.health.v1.Health/Check');
  });

  it('answers a method the protos lack, or a message taken for a service, with an Internal error', () => {
    const pkg = protoPackage([HEALTH], { keepCase: true });
    assert.throws(
      () => pkg.method('grpc.health.v1.Health', 'Nope'),
      (err) => hasCode(err, 'Internal'),
    );
    assert.throws(
      () => pkg.method('grpc.health.v1.HealthCheckRequest', 'Check'),
      /missing from health\.proto/,
    );
  });
});
