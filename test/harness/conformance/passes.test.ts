import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { selects } from './junit.ts';
import { DEFAULT_SKIP, KUBELET_EXTRA, NODE_CONFORMANCE, STORAGE, passesFor } from './passes.ts';
import { dockerConfigJson, localRef, repoListYaml } from './e2e-images.ts';
import { kubeletCommand } from './kubelet.ts';

describe('spec selections', () => {
  it('the kubelet-only extras exclude [NodeConformance] and the default skips', () => {
    assert.equal(
      selects(
        KUBELET_EXTRA,
        '[k8s.io] [sig-node] PreStop should call prestop when killing a pod  [Conformance]',
      ),
      true,
    );
    assert.equal(
      selects(
        KUBELET_EXTRA,
        '[sig-storage] Subpath Atomic writer volumes should support subpaths with secret pod [LinuxOnly] [Conformance]',
      ),
      true,
    );
    assert.equal(
      selects(KUBELET_EXTRA, '[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]'),
      false,
    );
    assert.equal(selects(KUBELET_EXTRA, '[k8s.io] Probing container should be restarted [Slow]'), false);
    assert.equal(
      selects(
        KUBELET_EXTRA,
        '[sig-network] Networking Granular Checks: Services should update endpoints: udp',
      ),
      false,
    );
    // "Pods" is a whole word: "PodSecurityPolicy" is not an area of the kubelet's.
    assert.equal(selects(KUBELET_EXTRA, '[sig-node] PodSecurityPolicy should allow x'), false);
  });

  it('the storage suite selects the local and hostPath volume specs a node can serve alone', () => {
    const yes = [
      '[sig-storage] PersistentVolumes-local  [Volume type: dir] One pod requesting one prebound PVC should be able to mount volume and read from pod1',
      '[sig-storage] In-tree Volumes [Driver: local][LocalVolumeType: block] [Testpattern: Pre-provisioned PV (block volmode)] volumes should store data',
      '[sig-storage] In-tree Volumes [Driver: hostPath] [Testpattern: Inline-volume (default fs)] subPath should support existing directory',
      '[sig-storage] In-tree Volumes [Driver: hostPathSymlink] [Testpattern: Inline-volume (default fs)] volumes should store data',
    ];
    const no = [
      '[sig-storage] In-tree Volumes [Driver: local][LocalVolumeType: dir] [Testpattern: Dynamic PV (default fs)] volumes should store data',
      '[sig-storage] In-tree Volumes [Driver: local][LocalVolumeType: tmpfs] [Testpattern: Inline-volume (ntfs)][sig-windows] volumes should store data',
      '[sig-storage] In-tree Volumes [Driver: nfs] [Testpattern: Pre-provisioned PV (default fs)] volumes should store data',
      '[sig-storage] PersistentVolumes-local  Stress with local volumes [Serial] should be able to process many pods and reuse local volumes',
    ];
    for (const spec of yes) assert.equal(selects(STORAGE, spec), true, spec);
    for (const spec of no) assert.equal(selects(STORAGE, spec), false, spec);
    assert.deepEqual(passesFor('storage'), [STORAGE]);
  });

  it('--focus replaces the suite, --skip replaces the skips', () => {
    assert.deepEqual(passesFor('node-conformance'), [NODE_CONFORMANCE]);
    assert.deepEqual(passesFor('all', undefined, 'x'), [
      { ...NODE_CONFORMANCE, skip: 'x' },
      { ...KUBELET_EXTRA, skip: 'x' },
    ]);
    assert.deepEqual(passesFor('all', 'host IP'), [{ name: 'custom', focus: 'host IP', skip: DEFAULT_SKIP }]);
  });
});

describe('e2e images', () => {
  it('moves every registry to the bed except the invalid one', () => {
    const yaml = repoListYaml();
    assert.match(yaml, /^promoterE2eRegistry: 127\.0\.0\.1:5000\/k8s\.gcr\.io\/e2e-test-images$/m);
    assert.match(yaml, /^gcAuthenticatedRegistry: 127\.0\.0\.1:5001\/gcr\.io\/authenticated-image-pulling$/m);
    assert.match(yaml, /^invalidRegistry: invalid\.com\/invalid$/m);
    assert.equal(
      localRef({ upstream: 'k8s.gcr.io/e2e-test-images/agnhost:2.21', home: 'open' }),
      '127.0.0.1:5000/k8s.gcr.io/e2e-test-images/agnhost:2.21',
    );
  });

  it('hands the specs credentials for the private registry only', () => {
    const cfg = JSON.parse(dockerConfigJson()) as { auths: Record<string, { auth: string }> };
    assert.deepEqual(Object.keys(cfg.auths), ['127.0.0.1:5001']);
    assert.equal(
      Buffer.from(cfg.auths['127.0.0.1:5001']?.auth ?? '', 'base64').toString(),
      'bed:pull-s3cret',
    );
  });
});

describe('kubelet command lines', () => {
  const spec = {
    nodeName: 'n1',
    kubeconfig: '/k',
    caFile: '/ca.crt',
    endpoint: 'unix:///run/c.sock',
    nodeIp: '192.0.2.2',
    rootDir: '/r',
    logFile: '/l',
  };

  it('upstream: the kubelet API for the API server client certificate only, on the default port', () => {
    const { args } = kubeletCommand({ ...spec, kind: 'upstream' });
    for (const f of [
      '--client-ca-file=/ca.crt',
      '--anonymous-auth=false',
      '--authorization-mode=Webhook',
      '--authentication-token-webhook=true',
      '--node-ip=192.0.2.2',
      '--containerd=/run/c.sock',
    ]) {
      assert.ok(args.includes(f), f);
    }
    assert.equal(
      args.some((a) => a.startsWith('--port=')),
      false,
    );
  });

  it('tskubelet: the flags the brief gives, and extra ones last', () => {
    const { cmd, args } = kubeletCommand({ ...spec, kind: 'tskubelet', extraArgs: ['--v', '4'] });
    assert.match(cmd, /bin\/tskubelet$/);
    assert.deepEqual(args.slice(0, 1), ['run']);
    assert.ok(args.includes('--client-ca-file=/ca.crt'));
    assert.deepEqual(args.slice(-2), ['--v', '4']);
  });
});
