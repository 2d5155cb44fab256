/**
 * tskubelet as its own process: moved to the test kit (test/kit/process.ts); re-exported here for
 * the suites that still import it from this path (test/security).
 */
export {
  TSKUBELET_BIN,
  setVariantKubeletFlags,
  variantKubeletFlags,
  spawnTskubelet,
  startNodeKubelet,
  startStandaloneKubelet,
  type NodeKubeletOptions,
  type StandaloneKubeletOptions,
  type TskubeletProcess,
} from '../kit/process.ts';
