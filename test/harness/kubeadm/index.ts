/**
 * The kubeadm side of the cluster bed: kubeadm 1.20.2 built from the bed's source tree, the bed's
 * control plane prepared as `kubeadm init` leaves one, and `kubeadm join` of a node whose kubelet is
 * the binary under test (join.ts has the walk-through). By hand: `node test/harness/kubeadm/main.ts`.
 * No upstream counterpart.
 */
export { ensureKubeadm } from './build.ts';
export {
  API_SERVER_ENDPOINT,
  BOOTSTRAP_TOKEN,
  PLACEHOLDER_CONTROL_PLANE_NODE,
  caCertHash,
} from './config.ts';
export {
  BED_IGNORED_PREFLIGHT_ERRORS,
  bedKubeletExtraArgs,
  bootstrappedKubeconfig,
  kubeadmJoin,
  resetKubeadmNode,
} from './join.ts';
export type { JoinedNode, KubeadmJoinOptions } from './join.ts';
export type { KubeletService } from './kubelet-service.ts';
export { inNamespace } from './namespace.ts';
export { KUBEADM_PATHS, nodePaths } from './paths.ts';
export type { NodePaths } from './paths.ts';
export { prepareControlPlane } from './prepare.ts';
export type { JoinTicket } from './prepare.ts';
