import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchRoute } from './routes.ts';
import { requestAttributes, verbFor } from './auth/authorizer.ts';

describe('matchRoute', () => {
  it('parses upstream paths into typed routes', () => {
    assert.deepEqual(matchRoute('/pods'), { kind: 'pods' });
    assert.deepEqual(matchRoute('/pods/'), { kind: 'pods' });
    assert.deepEqual(matchRoute('/runningpods/'), { kind: 'runningpods' });
    assert.deepEqual(matchRoute('/metrics/probes'), { kind: 'metrics', which: 'probes' });
    assert.deepEqual(matchRoute('/metrics/cadvisor'), { kind: 'metrics', which: 'cadvisor' });
    assert.deepEqual(matchRoute('/stats/summary'), { kind: 'stats-summary' });
    assert.deepEqual(matchRoute('/containerLogs/ns/web/nginx'), {
      kind: 'containerLogs',
      namespace: 'ns',
      pod: 'web',
      container: 'nginx',
    });
    assert.deepEqual(matchRoute('/exec/ns/web/uid-1/c'), {
      kind: 'exec',
      namespace: 'ns',
      pod: 'web',
      uid: 'uid-1',
      container: 'c',
    });
    assert.deepEqual(matchRoute('/attach/ns/web/c'), {
      kind: 'attach',
      namespace: 'ns',
      pod: 'web',
      container: 'c',
    });
    assert.deepEqual(matchRoute('/portForward/ns/web'), { kind: 'portForward', namespace: 'ns', pod: 'web' });
    assert.deepEqual(matchRoute('/logs/syslog'), { kind: 'logs', subpath: 'syslog' });
    assert.deepEqual(matchRoute('/logs/'), { kind: 'logs', subpath: '' });
  });

  it('refuses traversal and malformed names instead of passing them to a handler', () => {
    for (const p of [
      '/containerLogs/ns/%2e%2e/c',
      '/containerLogs/ns/a%2Fb/c',
      '/logs/../etc/passwd',
      '/logs/%2e%2e/etc/passwd',
      '/exec/ns/p/%00',
      '/containerLogs/ns/p/%E0%A4%A',
      `/pods/${'x'.repeat(5000)}`,
      '/containerLogs/ns/p',
      '/exec/ns/p/a/b/c',
      '/stats/container',
      '/nothing',
    ]) {
      assert.deepEqual(matchRoute(p), { kind: 'not-found' }, p);
    }
  });
});

describe('request attributes (upstream node authorizer mapping)', () => {
  const user = { name: 'u', groups: [] };
  it('maps paths to node subresources and methods to verbs', () => {
    const sub = (path: string) => requestAttributes(user, 'GET', path, 'n1').subresource;
    assert.equal(sub('/stats/summary'), 'stats');
    assert.equal(sub('/metrics'), 'metrics');
    assert.equal(sub('/metrics/cadvisor'), 'metrics');
    assert.equal(sub('/logs/syslog'), 'log');
    assert.equal(sub('/spec/'), 'spec');
    assert.equal(sub('/containerLogs/a/b/c'), 'proxy');
    assert.equal(sub('/pods'), 'proxy');
    assert.equal(sub('/statsx'), 'proxy');
    assert.deepEqual(
      [
        verbFor('GET'),
        verbFor('HEAD'),
        verbFor('POST'),
        verbFor('PUT'),
        verbFor('PATCH'),
        verbFor('DELETE'),
        verbFor('OPTIONS'),
      ],
      // HEAD as upstream: no verb (it was `get`).
      ['get', '', 'create', 'update', 'patch', 'delete', ''],
    );
    const a = requestAttributes(user, 'POST', '/exec/a/b/c', 'n1');
    assert.deepEqual(
      { verb: a.verb, resource: a.resource, name: a.name, subresource: a.subresource },
      { verb: 'create', resource: 'nodes', name: 'n1', subresource: 'proxy' },
    );
  });
});
