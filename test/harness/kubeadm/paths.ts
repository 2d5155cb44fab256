/**
 * Where the kubeadm harness finds kubeadm (built beside the control-plane binaries, outside the repo)
 * and keeps each joined node's files. kubeadm 1.20 hardcodes /etc/kubernetes and /var/lib/kubelet
 * (cmd/kubeadm/app/constants: KubernetesDir, KubeletRunDirectory); on this machine /var/lib/kubelet is
 * the conformance harness's kubelet root, so a node's copies live under its own directory and are
 * bound onto those paths inside the node's private mount namespace (namespace.ts).
 * No upstream counterpart.
 */
import { dirname, join } from 'node:path';
import { CLUSTER_PATHS, KUBERNETES_VERSION } from '../cluster/index.ts';

/** The cache root scripts/build-kubernetes.sh uses (TSKUBELET_K8S_CACHE overrides it there too). */
const CACHE = dirname(dirname(CLUSTER_PATHS.binDir));

export const KUBEADM_PATHS = {
  /** The unpacked Debian source tree of Kubernetes 1.20.2 (scripts/build-kubernetes.sh). */
  srcDir: join(CACHE, 'src', `kubernetes-${KUBERNETES_VERSION}`),
  binary: join(CLUSTER_PATHS.binDir, 'kubeadm'),
  /** The lock scripts/build-kubernetes.sh holds: one build in the tree at a time. */
  buildLock: join(CACHE, 'build.lock'),
  buildScript: new URL('./build-kubeadm.sh', import.meta.url).pathname,
  buildLog: join(CLUSTER_PATHS.logDir, 'build-kubeadm.log'),
  /** The kubeadm configuration the control plane was prepared with (`kubeadm init phase ... --config`). */
  initConfig: join(CLUSTER_PATHS.state, 'kubeadm', 'init-config.yaml'),
  /** Default parent of the joined nodes' directories (`<nodesDir>/<nodeName>`). */
  nodesDir: '/var/lib/tskubelet-bed/kubeadm-nodes',
} as const;

/** The paths kubeadm writes to on a node, and where a joined node keeps them (`<rootDir><path>`). */
export const KUBERNETES_DIR = '/etc/kubernetes';
export const KUBELET_RUN_DIR = '/var/lib/kubelet';
/** What a node's mount namespace binds from `<rootDir><path>` onto `<path>`. */
export const NODE_BOUND_DIRS: readonly string[] = [KUBERNETES_DIR, KUBELET_RUN_DIR];

/** A node's files, all under its `rootDir`. */
export function nodePaths(rootDir: string) {
  const kubelet = join(rootDir, KUBELET_RUN_DIR);
  return {
    rootDir,
    /** Seen as /etc/kubernetes inside the node's namespace. */
    kubernetesDir: join(rootDir, KUBERNETES_DIR),
    /**
     * Seen as /var/lib/kubelet inside the node's namespace, and the kubelet's --root-dir by its host
     * path (a shared mount: what the kubelet mounts there, containerd sees).
     */
    kubeletDir: kubelet,
    bootstrapKubeconfig: join(rootDir, KUBERNETES_DIR, 'bootstrap-kubelet.conf'),
    kubeletKubeconfig: join(rootDir, KUBERNETES_DIR, 'kubelet.conf'),
    caCert: join(rootDir, KUBERNETES_DIR, 'pki', 'ca.crt'),
    kubeletConfig: join(kubelet, 'config.yaml'),
    kubeadmFlags: join(kubelet, 'kubeadm-flags.env'),
    /** The kubelet's certificates (its --cert-dir default, `<root-dir>/pki`). */
    certDir: join(kubelet, 'pki'),
    /** KUBELET_EXTRA_ARGS, as /etc/default/kubelet on a Debian node. */
    defaultsFile: join(rootDir, 'etc', 'default', 'kubelet'),
    /** kubeadm's systemd drop-in, as the kubeadm package installs it. */
    dropIn: join(rootDir, 'etc', 'systemd', 'system', 'kubelet.service.d', '10-kubeadm.conf'),
    /** `systemctl` (the harness's stand-in) and `kubelet` (the kubelet under test), first on kubeadm's PATH. */
    binDir: join(rootDir, 'bin'),
    /** The stand-in systemctl's requests, pid files, the namespace holder's marker. */
    runDir: join(rootDir, 'run'),
    joinConfig: join(rootDir, 'join-config.yaml'),
    joinLog: join(rootDir, 'kubeadm-join.log'),
    kubeletLog: join(rootDir, 'kubelet.log'),
    namespaceLog: join(rootDir, 'namespace.log'),
  } as const;
}
export type NodePaths = ReturnType<typeof nodePaths>;
