import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { guestKubeconfig } from './node-vm-guest.ts';

describe('guestKubeconfig', () => {
  it('points a loopback API server at the host as the node VM sees it, keeping the rest', () => {
    const host = `apiVersion: v1
kind: Config
clusters:
  - name: bed
    cluster:
      server: https://127.0.0.1:16443
      certificate-authority-data: Q0E=
users:
  - name: system:node:n
    user:
      client-certificate-data: Q0VSVA==
`;
    const guest = parse(guestKubeconfig(host)) as {
      clusters: { cluster: Record<string, string> }[];
      users: { user: Record<string, string> }[];
    };
    assert.equal(guest.clusters[0]?.cluster.server, 'https://10.0.2.2:16443');
    assert.equal(guest.clusters[0]?.cluster['certificate-authority-data'], 'Q0E=');
    assert.equal(guest.users[0]?.user['client-certificate-data'], 'Q0VSVA==');
  });

  it('leaves a server that is not on the host loopback alone', () => {
    const text = 'clusters:\n  - cluster:\n      server: https://api.example:6443\n';
    assert.match(guestKubeconfig(text), /server: https:\/\/api.example:6443/);
  });
});
