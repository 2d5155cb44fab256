import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkControlPlaneOptions, componentSpec, pkiPaths } from './control-plane.ts';

void describe('cluster bed control plane command lines', () => {
  void it('authenticates bootstrap tokens (kubeadm join)', () => {
    assert.ok(
      componentSpec('kube-apiserver', pkiPaths()).args.includes('--enable-bootstrap-token-auth=true'),
    );
  });

  void it('runs the bootstrap signer and token cleaner beside the default controllers', () => {
    const args = componentSpec('kube-controller-manager', pkiPaths()).args;
    assert.ok(args.includes('--controllers=*,bootstrapsigner,tokencleaner'));
    assert.equal(
      args.some((a) => a.startsWith('--cluster-signing-duration')),
      false,
    );
  });

  void it('sets the CSR signing duration only when asked, and refuses one the 5m backdate would expire', () => {
    const args = componentSpec('kube-controller-manager', pkiPaths(), { clusterSigningDuration: '10m' }).args;
    assert.ok(args.includes('--cluster-signing-duration=10m'));
    assert.doesNotThrow(() => checkControlPlaneOptions({ clusterSigningDuration: '10m' }));
    assert.throws(() => checkControlPlaneOptions({ clusterSigningDuration: '5m' }), /below 6m/);
    assert.throws(
      () => checkControlPlaneOptions({ clusterSigningDuration: 'ten' }),
      /clusterSigningDuration/,
    );
  });
});
