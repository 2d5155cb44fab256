/**
 * Where the conformance harness finds the Kubernetes source tree and keeps what it builds (beside
 * the control-plane binaries, outside the repository) and what it writes (results, kubelet state).
 */
import { dirname, join } from 'node:path';
import { CLUSTER_PATHS, KUBERNETES_VERSION } from '../cluster/index.ts';

/** The cache root scripts/build-kubernetes.sh uses (TSKUBELET_K8S_CACHE overrides it there too). */
const CACHE = dirname(dirname(CLUSTER_PATHS.binDir));

export const CONFORMANCE_PATHS = {
  /** The unpacked Debian source tree of Kubernetes 1.20.2. */
  srcDir: join(CACHE, 'src', `kubernetes-${KUBERNETES_VERSION}`),
  /** e2e.test, ginkgo, agnhost, nnp land here, beside kube-apiserver & co. */
  binDir: CLUSTER_PATHS.binDir,
  /** The lock scripts/build-kubernetes.sh holds: one build in the tree at a time. */
  buildLock: join(CACHE, 'build.lock'),
  buildScript: new URL('./build-e2e.sh', import.meta.url).pathname,
  buildLog: join(CLUSTER_PATHS.logDir, 'build-e2e.log'),
  /** OCI archives of the e2e images (content-keyed). */
  imageCache: join(CACHE, 'images', 'conformance'),
  /** Debian packages downloaded for image contents (netcat-openbsd). */
  debCache: join(CACHE, 'debs'),
  /** Default parent of the per-run results folders. */
  resultsRoot: '/var/tmp/tskubelet-conformance',
  /** Root directories of the kubelets under test (removed after each run). */
  kubeletRoot: '/var/lib/tskubelet-conformance',
  /** Files handed to e2e.test (the registry list, the private registry's docker config). */
  runDir: '/run/tskubelet-bed/conformance',
} as const;

export type ConformanceBinary = 'e2e.test' | 'ginkgo' | 'agnhost' | 'nnp';
export const CONFORMANCE_BINARIES: readonly ConformanceBinary[] = ['e2e.test', 'ginkgo', 'agnhost', 'nnp'];

export function conformanceBinary(name: ConformanceBinary): string {
  return join(CONFORMANCE_PATHS.binDir, name);
}
