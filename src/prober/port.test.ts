import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { joinHostPort, resolveContainerPort } from './port.ts';

describe('probe port resolution', () => {
  const container = { name: 'web', ports: [{ name: 'http', containerPort: 8080 }] };

  it('takes numbers as they are, names from the container ports, and numeric strings as numbers', () => {
    assert.equal(resolveContainerPort(81, container), 81);
    assert.equal(resolveContainerPort('http', container), 8080);
    assert.equal(resolveContainerPort('9090', container), 9090);
  });

  it('rejects unknown names and numbers outside 1..65535', () => {
    assert.throws(() => resolveContainerPort('metrics', container), /port metrics not found/);
    assert.throws(() => resolveContainerPort(0, container), /invalid port number: 0/);
    assert.throws(() => resolveContainerPort(70000, container), /invalid port number: 70000/);
  });

  it('brackets IPv6 hosts', () => {
    assert.equal(joinHostPort('10.0.0.1', 80), '10.0.0.1:80');
    assert.equal(joinHostPort('fd00::1', 80), '[fd00::1]:80');
  });
});
