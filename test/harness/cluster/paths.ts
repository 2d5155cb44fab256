/**
 * Where the cluster bed keeps its state, pids, logs and binaries, and the loopback ports it
 * listens on. Ports are off the defaults (2379, 6443, 10257, 10259) so a system etcd or another
 * cluster on the machine never clashes with the bed.
 */

const STATE = '/var/lib/tskubelet-bed/cluster';
const RUN = '/run/tskubelet-bed/cluster';
const LOGS = '/var/log/tskubelet-bed';

export const KUBERNETES_VERSION = '1.20.2';

/** Overridable like scripts/build-kubernetes.sh, which reads the same variable. */
const CACHE = process.env.TSKUBELET_K8S_CACHE ?? '/var/cache/tskubelet-bed';

export const CLUSTER_PATHS = {
  state: STATE,
  etcdData: `${STATE}/etcd`,
  pki: `${STATE}/pki`,
  /** Per-node client certificates (`<node>.crt`/`.key`). */
  nodePki: `${STATE}/pki/nodes`,
  /** Self-signed serving certs the controller-manager and scheduler generate for their health ports. */
  componentCertDir: `${STATE}/pki/serving`,
  adminKubeconfig: `${STATE}/admin.kubeconfig`,
  controllerManagerKubeconfig: `${STATE}/controller-manager.kubeconfig`,
  schedulerKubeconfig: `${STATE}/scheduler.kubeconfig`,
  /** `<node>.kubeconfig` per node, written by `kubeletKubeconfig()`. */
  kubeletKubeconfigDir: `${STATE}/kubelet`,
  run: RUN,
  lock: `${RUN}/start.lock`,
  logDir: LOGS,
  buildLog: `${LOGS}/build-kubernetes.log`,
  binDir: `${CACHE}/kubernetes-${KUBERNETES_VERSION}/bin`,
  buildScript: new URL('../../../scripts/build-kubernetes.sh', import.meta.url).pathname,
} as const;

export const CLUSTER_PORTS = {
  etcdClient: 12379,
  etcdPeer: 12380,
  apiserver: 16443,
  controllerManager: 16257,
  scheduler: 16259,
} as const;

export const CLUSTER_HOST = '127.0.0.1';
/**
 * The host's loopback as a node VM sees it (QEMU user networking maps 10.0.2.2 to the host's
 * 127.0.0.1): a kubelet in the VM reaches the API server at this address, so it is in the API
 * server's certificate too.
 */
export const NODE_VM_HOST_ADDRESS = '10.0.2.2';
export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';
/** The first address of the service range: the `kubernetes` service's ClusterIP. */
export const KUBERNETES_SERVICE_IP = '10.0.0.1';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
export const CLUSTER_NAME = 'tskubelet-bed';

export type ComponentName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

export const COMPONENTS: readonly ComponentName[] = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
];

export function pidFile(name: ComponentName): string {
  return `${RUN}/${name}.pid`;
}

export function logFile(name: ComponentName): string {
  return `${LOGS}/${name}.log`;
}
