// The command line kubeadm 1.20 starts the kubelet with, parsed unchanged. Upstream sources:
// the kubeadm drop-in 10-kubeadm.conf ("This dropin only works with kubeadm and kubelet v1.11+":
// kubernetes release-1.17 build/debs/10-kubeadm.conf; the kubeadm packages of kubernetes/release
// ship the same text for 1.20), cmd/kubeadm/app/phases/kubelet/flags.go
// (buildKubeletArgMapCommon: /var/lib/kubelet/kubeadm-flags.env), cmd/kubeadm/app/util/arguments.go
// (BuildArgumentListFromMap: `--key=value`, sorted), cmd/kubeadm/app/componentconfigs/kubelet.go
// (the defaults kubeadm writes into /var/lib/kubelet/config.yaml), all at v1.20.2.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { routeArgs } from './argv.ts';
import { parseRunArgs } from './flags.ts';

/** The drop-in's Environment= lines (10-kubeadm.conf). */
const KUBELET_KUBECONFIG_ARGS =
  '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf';

/**
 * /var/lib/kubelet/config.yaml as kubeadm 1.20 writes it (v1beta1 marshalled after kubeadm's
 * defaulting: the non-pointer durations come out as 0s, `logging` as {}).
 */
const KUBEADM_CONFIG_YAML = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`;

/** The value of KUBELET_KUBEADM_ARGS in an env file kubeadm wrote (`%s=%q`). */
function envValue(envFile: string, name: string): string {
  const line = envFile.split('\n').find((l) => l.startsWith(`${name}=`)) ?? '';
  return (JSON.parse(line.slice(name.length + 1)) as string) ?? '';
}

/** What systemd passes for `$A $B …` in ExecStart: each variable split at whitespace. */
function execStartArgs(...values: string[]): string[] {
  return values.flatMap((v) => v.split(/\s+/).filter((w) => w !== ''));
}

describe("kubeadm 1.20's kubelet command line", () => {
  let dir = '';
  let configYaml = '';
  const opts = { hostname: () => 'worker-1', cwd: '/' };
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tskubelet-kubeadm-'));
    configYaml = path.join(dir, 'config.yaml');
    await writeFile(configYaml, KUBEADM_CONFIG_YAML);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts from the drop-in unchanged with containerd (remote runtime) and extra args', async () => {
    // kubeadm join on a containerd node: criSocket /run/containerd/containerd.sock, a node name
    // other than the hostname, taints for a worker, and kubeletExtraArgs (node-ip) merged in.
    const kubeadmFlagsEnv =
      'KUBELET_KUBEADM_ARGS="--container-runtime=remote --container-runtime-endpoint=/run/containerd/containerd.sock ' +
      '--hostname-override=worker-1.example --node-ip=10.0.0.11 --register-with-taints=dedicated=edge:NoSchedule"\n';
    const argv = routeArgs(
      execStartArgs(
        KUBELET_KUBECONFIG_ARGS,
        `--config=${configYaml}`,
        envValue(kubeadmFlagsEnv, 'KUBELET_KUBEADM_ARGS'),
        '--cgroup-driver=systemd --resolv-conf=/run/systemd/resolve/resolv.conf',
      ),
      'kubelet',
    );
    assert.equal(argv[0], 'run');
    const { config, warnings } = await parseRunArgs(argv.slice(1), opts);
    assert.equal(config.kubeconfig, '/etc/kubernetes/kubelet.conf');
    assert.equal(config.bootstrapKubeconfig, '/etc/kubernetes/bootstrap-kubelet.conf');
    assert.equal(config.certDirectory, '/var/lib/kubelet/pki');
    assert.equal(config.configFile, configYaml);
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
    assert.equal(config.nodeName, 'worker-1.example');
    assert.equal(config.nodeIP, '10.0.0.11');
    assert.deepEqual(config.registerWithTaints, [{ key: 'dedicated', value: 'edge', effect: 'NoSchedule' }]);
    assert.equal(config.cgroupDriver, 'systemd');
    assert.equal(config.resolvConf, '/run/systemd/resolve/resolv.conf');
    // The file's kubeadm defaults, its 0s durations meaning "the default" (v1beta1 defaulting).
    assert.equal(config.staticPodPath, '/etc/kubernetes/manifests');
    assert.deepEqual(config.clusterDNS, ['10.96.0.10']);
    assert.equal(config.clusterDomain, 'cluster.local');
    assert.equal(config.healthzBindAddress, '127.0.0.1');
    assert.equal(config.syncFrequencyMs, 60_000);
    assert.equal(config.server.authentication.anonymous, false);
    assert.equal(config.server.authentication.clientCAFile, '/etc/kubernetes/pki/ca.crt');
    assert.equal(config.server.authorization.mode, 'Webhook');
    assert.equal(config.rotateCertificates, true);
    // What tskubelet does not implement is said, one warning each, and nothing else is.
    // (upstream 1.20 too warns about an endpoint without unix://).
    assert.deepEqual(
      warnings.map((w) =>
        w
          .replace(/^.*field "(\w+)".*$/, 'field $1')
          .replace(/^flag (--[\w-]+) .*$/, '$1')
          .replace(/^--container-runtime-endpoint: .* has no scheme.*$/, 'endpoint without scheme'),
      ),
      ['field cpuManagerReconcilePeriod', 'endpoint without scheme', '--container-runtime'],
    );
  });

  it('starts from the drop-in unchanged with the flags kubeadm writes for a Docker node', async () => {
    const kubeadmFlagsEnv =
      'KUBELET_KUBEADM_ARGS="--network-plugin=cni --pod-infra-container-image=k8s.gcr.io/pause:3.2"\n';
    const argv = execStartArgs(
      KUBELET_KUBECONFIG_ARGS,
      `--config=${configYaml}`,
      envValue(kubeadmFlagsEnv, 'KUBELET_KUBEADM_ARGS'),
      '',
    );
    const { config, warnings } = await parseRunArgs(routeArgs(argv, 'tskubelet').slice(1), opts);
    assert.equal(config.kubeconfig, '/etc/kubernetes/kubelet.conf');
    assert.equal(config.nodeName, 'worker-1');
    assert.ok(warnings.some((w) => w.startsWith('flag --network-plugin is not implemented')));
    assert.ok(warnings.some((w) => w.startsWith('flag --pod-infra-container-image is not implemented')));
  });
});
