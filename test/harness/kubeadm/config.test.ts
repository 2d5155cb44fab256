import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseAllDocuments, parse } from 'yaml';
import {
  API_SERVER_ENDPOINT,
  BOOTSTRAP_TOKEN,
  BOOTSTRAP_TOKEN_GROUP,
  PLACEHOLDER_CONTROL_PLANE_NODE,
  caCertHash,
  initConfigYaml,
  joinConfigYaml,
} from './config.ts';

/** A throwaway CA; its hash below is `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | sha256sum`. */
const CA = `-----BEGIN CERTIFICATE-----
MIIBgTCCASegAwIBAgIUIuHC29WC4QD/XeCwgma3pHdsiFswCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKZml4dHVyZS1jYTAgFw0yNjExMjgxMTI1MDdaGA8yMTI2MTEw
NDExMjUwN1owFTETMBEGA1UEAwwKZml4dHVyZS1jYTBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABND6sXXWw4cdakXp9lRNNTuBsd2/6lwiaNqBieoZncvZWpLXLdov
uLlfV8HPaV06chV9CbRNvY1jPCRr8opefeSjUzBRMB0GA1UdDgQWBBQeFxm3GKNH
6AIOC/G/u/h0tDutmzAfBgNVHSMEGDAWgBQeFxm3GKNH6AIOC/G/u/h0tDutmzAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCICDPfvOQ7hxH63ICjvS3
Gb8ouK6CVqs7Lw0U4iMYUCdZAiEAxyiTjd6PIK3lxrcjJp4GC0+GPo3aQo9hzsJp
Mjw+njY=
-----END CERTIFICATE-----
`;

void describe('kubeadm configuration for the bed', () => {
  void it('hashes the CA public key as --discovery-token-ca-cert-hash wants it', () => {
    assert.equal(caCertHash(CA), 'sha256:da071ce398a15e1083324fd636028a5301f0cc06f5c285068b5843e9e8dc3c5a');
  });

  void it('uses a token kubeadm accepts ([a-z0-9]{6}.[a-z0-9]{16})', () => {
    assert.match(BOOTSTRAP_TOKEN, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  });

  void it('gives the init phases the token, a placeholder control-plane node and the kubelet config', () => {
    const docs = parseAllDocuments(initConfigYaml()).map((d) => d.toJS() as Record<string, unknown>);
    assert.deepEqual(
      docs.map((d) => d.kind),
      ['InitConfiguration', 'ClusterConfiguration', 'KubeletConfiguration'],
    );
    const [init, cluster, kubelet] = docs as [
      {
        bootstrapTokens: { token: string; groups: string[]; usages: string[] }[];
        nodeRegistration: { name: string };
      },
      { kubernetesVersion: string; controlPlaneEndpoint: string },
      { cgroupDriver: string },
    ];
    assert.equal(init.bootstrapTokens[0]?.token, BOOTSTRAP_TOKEN);
    assert.deepEqual(init.bootstrapTokens[0]?.groups, [BOOTSTRAP_TOKEN_GROUP]);
    assert.deepEqual(init.bootstrapTokens[0]?.usages, ['signing', 'authentication']);
    assert.equal(init.nodeRegistration.name, PLACEHOLDER_CONTROL_PLANE_NODE);
    assert.equal(cluster.kubernetesVersion, 'v1.20.2');
    assert.equal(cluster.controlPlaneEndpoint, API_SERVER_ENDPOINT);
    assert.equal(kubelet.cgroupDriver, 'cgroupfs');
  });

  void it('joins a worker by token discovery pinned to the CA, with the node flags as kubeletExtraArgs', () => {
    const doc = parse(
      joinConfigYaml({
        nodeName: 'n1',
        caCertHash: 'sha256:ab',
        kubeletExtraArgs: { 'root-dir': '/r', x: '' },
      }),
    ) as {
      kind: string;
      discovery: {
        bootstrapToken: { apiServerEndpoint: string; token: string; caCertHashes: string[] };
        tlsBootstrapToken: string;
      };
      nodeRegistration: { name: string; taints: unknown[]; kubeletExtraArgs: Record<string, string> };
    };
    assert.equal(doc.kind, 'JoinConfiguration');
    assert.deepEqual(doc.discovery.bootstrapToken, {
      apiServerEndpoint: API_SERVER_ENDPOINT,
      token: BOOTSTRAP_TOKEN,
      caCertHashes: ['sha256:ab'],
    });
    assert.equal(doc.discovery.tlsBootstrapToken, BOOTSTRAP_TOKEN);
    assert.equal(doc.nodeRegistration.name, 'n1');
    assert.deepEqual(doc.nodeRegistration.taints, []);
    assert.deepEqual(doc.nodeRegistration.kubeletExtraArgs, { 'root-dir': '/r', x: '' });
  });
});
