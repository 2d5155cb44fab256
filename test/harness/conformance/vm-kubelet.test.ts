import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { kubeletCommand, type KubeletSpec } from './kubelet.ts';
import { GUEST, VM_NODE_IP, VM_UNITS, kubeletConfig, vmExecStart } from './vm-kubelet.ts';

const UPSTREAM = '/var/cache/tskubelet-bed/kubernetes-1.20.2/bin/kubelet';
const spec: Omit<KubeletSpec, 'kind'> = {
  nodeName: 'conformance-x',
  kubeconfig: '/host/kubelet.kubeconfig',
  caFile: '/host/ca.crt',
  endpoint: 'unix:///run/tskubelet-bed/containerd.sock',
  nodeIp: '192.0.2.2',
  rootDir: '/var/lib/tskubelet-conformance/x',
  logFile: '/var/tmp/r/kubelet.log',
  extraArgs: ['--v=4'],
};
const argv = (line: string): string[] => line.split(' ');

describe('the kubelets in the node VM', () => {
  it('gives both the guest address as node IP, the guest paths, the config file, and extra flags last', () => {
    for (const kind of ['tskubelet', 'upstream'] as const) {
      const args = argv(vmExecStart({ ...spec, kind }, UPSTREAM));
      for (const f of [
        `--node-ip=${VM_NODE_IP}`,
        '--hostname-override=conformance-x',
        `--config=${GUEST.config}`,
        `--kubeconfig=${GUEST.kubeconfig}`,
        `--container-runtime-endpoint=${GUEST.endpoint}`,
        `--root-dir=${GUEST.rootDir}`,
      ]) {
        assert.ok(args.includes(f), `${kind}: ${f}`);
      }
      assert.equal(args.at(-1), '--v=4', kind);
      // Nothing of the host's: its kubeconfig, containerd socket, root dir or address.
      const host = [spec.kubeconfig, spec.caFile, spec.endpoint, spec.rootDir, spec.nodeIp];
      assert.ok(!args.some((a) => host.some((h) => a.includes(h))), kind);
    }
    assert.equal(VM_NODE_IP, '10.0.2.15');
  });

  it('runs tskubelet from the checkout and upstream from the shared build cache, each as its own unit', () => {
    assert.deepEqual(argv(vmExecStart({ ...spec, kind: 'tskubelet' }, UPSTREAM)).slice(1, 2), ['run']);
    assert.match(vmExecStart({ ...spec, kind: 'tskubelet' }, UPSTREAM), /^\/\S+\/bin\/tskubelet run /);
    assert.equal(argv(vmExecStart({ ...spec, kind: 'upstream' }, UPSTREAM))[0], UPSTREAM);
    assert.notEqual(VM_UNITS.tskubelet, VM_UNITS.upstream);
  });

  it('gives upstream the node flags of its host run, without the host-only cgroup and API flags', () => {
    const vm = argv(vmExecStart({ ...spec, kind: 'upstream' }, UPSTREAM));
    for (const f of [
      '--container-runtime=remote',
      '--containerd=/run/containerd/containerd.sock',
      '--kube-api-qps=50',
      '--kube-api-burst=100',
      '--event-qps=50',
      '--event-burst=100',
      '--fail-swap-on=false',
      `--volume-plugin-dir=${GUEST.rootDir}/volume-plugins`,
    ]) {
      assert.ok(vm.includes(f), f);
    }
    const host = kubeletCommand({ ...spec, kind: 'upstream' }).args;
    const name = (a: string): string => a.split('=')[0] ?? a;
    const hostOnly = host.map(name).filter((n) => !vm.map(name).includes(n));
    // What the config file says in the VM (systemd driver, QoS cgroups, authn/authz) instead.
    assert.deepEqual(hostOnly.sort(), [
      '--anonymous-auth',
      '--authentication-token-webhook',
      '--authorization-mode',
      '--cgroup-driver',
      '--cgroups-per-qos',
      '--client-ca-file',
      '--enforce-node-allocatable',
      '--read-only-port',
    ]);
  });

  it('configures the systemd driver and the API server client certificate only, as kubeadm does', () => {
    const c = parse(kubeletConfig()) as Record<string, unknown>;
    assert.equal(c['cgroupDriver'], 'systemd');
    assert.equal(c['readOnlyPort'], 0);
    assert.deepEqual(c['authentication'], {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: GUEST.ca },
    });
    assert.deepEqual(c['authorization'], { mode: 'Webhook' });
  });
});
