/**
 * The kubeadm configuration documents (kubeadm.k8s.io/v1beta2, the API of kubeadm 1.20) the harness
 * hands to kubeadm: the InitConfiguration + ClusterConfiguration + KubeletConfiguration that
 * `kubeadm init phase bootstrap-token|upload-config` take to prepare the cluster bed as `kubeadm init`
 * would leave it, and the JoinConfiguration of one node. Pure. Upstream counterpart:
 * cmd/kubeadm/app/apis/kubeadm/v1beta2/types.go.
 */
import { X509Certificate, createHash } from 'node:crypto';
import { stringify } from 'yaml';
import {
  CLUSTER_NAME,
  CLUSTER_PORTS,
  KUBERNETES_VERSION,
  SERVICE_CLUSTER_IP_RANGE,
} from '../cluster/paths.ts';
import { BED_PATHS, BED_POD_SUBNET } from '../containerd.ts';

/** The API server's address as nodes reach it (host:port, what `kubeadm join` takes). */
export const API_SERVER_ENDPOINT = `127.0.0.1:${CLUSTER_PORTS.apiserver}`;

/**
 * The bed's bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`). Fixed, so a join by hand can be typed; the
 * bed listens on loopback only. Its Secret is re-made with a fresh TTL by every prepare.
 */
export const BOOTSTRAP_TOKEN = 'tskbed.bootstraptoken01';
export const BOOTSTRAP_TOKEN_TTL = '24h0m0s';
/** The group kubeadm's RBAC (kubeadm:kubelet-bootstrap, node-autoapprove-bootstrap) names. */
export const BOOTSTRAP_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token';

/**
 * `upload-config kubelet` annotates the control-plane Node with its CRI socket and waits up to 2 min
 * for that Node (cmd/kubeadm/app/cmd/phases/init/uploadconfig.go, runUploadKubeletConfig): the bed
 * has no control-plane node, so prepare.ts makes this one for the duration of the phase.
 */
export const PLACEHOLDER_CONTROL_PLANE_NODE = 'tskubelet-bed-kubeadm-control-plane';

/** The CRI socket kubeadm writes into kubeadm-flags.env (`--container-runtime-endpoint`). */
export const BED_CRI_SOCKET = BED_PATHS.socket;

const KUBEADM_API = 'kubeadm.k8s.io/v1beta2';

/**
 * `sha256:<hex>` of the CA's SubjectPublicKeyInfo: `--discovery-token-ca-cert-hash`, as kubeadm's
 * pubkeypin.Hash computes it (cmd/kubeadm/app/util/pubkeypin).
 */
export function caCertHash(caPem: string): string {
  const spki = new X509Certificate(caPem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/**
 * The cluster-wide kubelet settings the bed's nodes get from the kubelet-config-1.20 ConfigMap,
 * beyond kubeadm's own defaults (componentconfigs/kubelet.go: healthz on 127.0.0.1:10248, webhook
 * authn/authz, the client CA, rotateCertificates forced on, read-only port 0).
 */
export const BED_KUBELET_CONFIGURATION: Readonly<Record<string, unknown>> = {
  apiVersion: 'kubelet.config.k8s.io/v1beta1',
  kind: 'KubeletConfiguration',
  // No systemd on this machine; kubeadm 1.20 sets the driver only for Docker.
  cgroupDriver: 'cgroupfs',
};

/** The three documents `kubeadm init phase bootstrap-token|upload-config kubeadm|kubelet --config` read. */
export function initConfigYaml(): string {
  const init = {
    apiVersion: KUBEADM_API,
    kind: 'InitConfiguration',
    bootstrapTokens: [
      {
        token: BOOTSTRAP_TOKEN,
        description: 'tskubelet cluster bed: kubeadm join',
        ttl: BOOTSTRAP_TOKEN_TTL,
        usages: ['signing', 'authentication'],
        groups: [BOOTSTRAP_TOKEN_GROUP],
      },
    ],
    nodeRegistration: {
      name: PLACEHOLDER_CONTROL_PLANE_NODE,
      criSocket: BED_CRI_SOCKET,
      taints: [],
    },
  };
  const cluster = {
    apiVersion: KUBEADM_API,
    kind: 'ClusterConfiguration',
    clusterName: CLUSTER_NAME,
    kubernetesVersion: `v${KUBERNETES_VERSION}`,
    controlPlaneEndpoint: API_SERVER_ENDPOINT,
    networking: {
      serviceSubnet: SERVICE_CLUSTER_IP_RANGE,
      podSubnet: BED_POD_SUBNET,
      dnsDomain: 'cluster.local',
    },
  };
  return [init, cluster, BED_KUBELET_CONFIGURATION].map((d) => stringify(d)).join('---\n');
}

export interface JoinConfigOptions {
  nodeName: string;
  /** `caCertHash(ca)` of the bed's CA. */
  caCertHash: string;
  /** nodeRegistration.kubeletExtraArgs: kubeadm writes them into kubeadm-flags.env. */
  kubeletExtraArgs: Readonly<Record<string, string>>;
}

/** A worker's JoinConfiguration: token discovery against the bed, the bed's containerd, no taints. */
export function joinConfigYaml(opts: JoinConfigOptions): string {
  return stringify({
    apiVersion: KUBEADM_API,
    kind: 'JoinConfiguration',
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: API_SERVER_ENDPOINT,
        token: BOOTSTRAP_TOKEN,
        caCertHashes: [opts.caCertHash],
      },
      tlsBootstrapToken: BOOTSTRAP_TOKEN,
      timeout: '2m0s',
    },
    nodeRegistration: {
      name: opts.nodeName,
      criSocket: BED_CRI_SOCKET,
      taints: [],
      kubeletExtraArgs: { ...opts.kubeletExtraArgs },
    },
  });
}
