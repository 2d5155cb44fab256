import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { restClientURLTemplate } from './rest-client.ts';

const t = (u: string, base?: string) => restClientURLTemplate(new URL(u), base);
const H = 'https://api:6443';

describe('restClientURLTemplate (client-go finalURLTemplate)', () => {
  it('replaces names and namespaces in core and group paths', () => {
    assert.equal(t(`${H}/api/v1/nodes/n1`), `${H}/api/v1/nodes/%7Bname%7D`);
    assert.equal(t(`${H}/api/v1/nodes/n1/status`), `${H}/api/v1/nodes/%7Bname%7D/status`);
    assert.equal(t(`${H}/api/v1/namespaces/ns/pods`), `${H}/api/v1/namespaces/%7Bnamespace%7D/pods`);
    assert.equal(
      t(`${H}/api/v1/namespaces/ns/pods/p/status`),
      `${H}/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D/status`,
    );
    assert.equal(
      t(`${H}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1`),
      `${H}/apis/coordination.k8s.io/v1/namespaces/%7Bnamespace%7D/leases/%7Bname%7D`,
    );
    assert.equal(t(`${H}/api/v1/pods`), `${H}/api/v1/pods`);
  });

  it('keeps query keys, sorted, with every value templated', () => {
    assert.equal(
      t(`${H}/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1&resourceVersion=5`),
      `${H}/api/v1/pods?fieldSelector=%7Bvalue%7D&resourceVersion=%7Bvalue%7D&watch=%7Bvalue%7D`,
    );
  });

  it('reduces a non-API path to {prefix} and leaves short paths alone', () => {
    assert.equal(t(`${H}/openapi/v2?x=1`), `${H}/%7Bprefix%7D`);
    assert.equal(t(`${H}/version`), `${H}/version`);
  });

  it('templates below the base path of the server URL and keeps it in front', () => {
    assert.equal(t(`${H}/k8s/api/v1/nodes/n1`, '/k8s/'), `${H}/k8s/api/v1/nodes/%7Bname%7D`);
  });
});
