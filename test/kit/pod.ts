/**
 * The one pod builder of the tests: a pod with sensible defaults (namespace `default`, UID
 * `uid-<name>`, one container `c` of busybox:1.29), every part replaceable. The folders' fixture
 * builders (apiPod, makePod, testPod, shutdownPod, ...) are thin aliases of it that keep their own
 * defaults. Upstream counterpart: the kubelet tests' podWithUIDNameNsSpec / newTestPods
 * (pkg/kubelet/kubelet_test.go).
 */
import type { Container, KubeletPod, Pod, PodSpec, PodStatus } from '../../src/api/types.ts';

/** A container by name (of `image`) or spelled out (its image defaulting to `image`). */
export type ContainerLike = string | (Partial<Container> & { name: string });

export interface PodOptions {
  /** `default` unless given. */
  namespace?: string;
  /** `uid-<name>` unless given. */
  uid?: string;
  /** Adds `apiVersion: v1, kind: Pod` (as a manifest or the API server has them). */
  typeMeta?: boolean;
  resourceVersion?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** `['c']` unless given. */
  containers?: readonly ContainerLike[];
  initContainers?: readonly ContainerLike[];
  /** The image of containers given by name or without one: busybox:1.29 unless given. */
  image?: string;
  restartPolicy?: PodSpec['restartPolicy'];
  terminationGracePeriodSeconds?: number;
  priority?: number;
  nodeName?: string;
  volumes?: PodSpec['volumes'];
  /** Any other spec field, applied last. */
  spec?: Partial<PodSpec>;
  status?: PodStatus;
}

export const DEFAULT_TEST_IMAGE = 'busybox:1.29';

/** A pod with an identity (the kind the kubelet core takes). */
export function buildPod(name: string, opts: PodOptions = {}): KubeletPod {
  const metadata: KubeletPod['metadata'] = {
    name,
    namespace: opts.namespace ?? 'default',
    uid: opts.uid ?? `uid-${name}`,
  };
  if (opts.resourceVersion !== undefined) metadata.resourceVersion = opts.resourceVersion;
  if (opts.creationTimestamp !== undefined) metadata.creationTimestamp = opts.creationTimestamp;
  if (opts.labels) metadata.labels = opts.labels;
  if (opts.annotations) metadata.annotations = opts.annotations;
  const p: KubeletPod = { metadata, spec: buildSpec(opts) };
  if (opts.status) p.status = opts.status;
  return opts.typeMeta ? { apiVersion: 'v1', kind: 'Pod', ...p } : p;
}

/**
 * A pod as a static pod's file or a client's create request holds it: `apiVersion`, `kind`, a name,
 * the namespace only when given, and the spec; no UID (the file source or the API server gives it).
 */
export function buildManifest(name: string, opts: Omit<PodOptions, 'uid' | 'typeMeta'> = {}): Pod {
  const p: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: buildSpec(opts) };
  if (opts.namespace !== undefined) p.metadata.namespace = opts.namespace;
  if (opts.labels) p.metadata.labels = opts.labels;
  if (opts.annotations) p.metadata.annotations = opts.annotations;
  return p;
}

function buildSpec(opts: PodOptions): PodSpec {
  const image = opts.image ?? DEFAULT_TEST_IMAGE;
  const ctr = (c: ContainerLike): Container => (typeof c === 'string' ? { name: c, image } : { image, ...c });
  const spec: PodSpec = { containers: (opts.containers ?? ['c']).map(ctr) };
  if (opts.initContainers) spec.initContainers = opts.initContainers.map(ctr);
  if (opts.restartPolicy) spec.restartPolicy = opts.restartPolicy;
  if (opts.terminationGracePeriodSeconds !== undefined)
    spec.terminationGracePeriodSeconds = opts.terminationGracePeriodSeconds;
  if (opts.priority !== undefined) spec.priority = opts.priority;
  if (opts.nodeName !== undefined) spec.nodeName = opts.nodeName;
  if (opts.volumes) spec.volumes = opts.volumes;
  return { ...spec, ...opts.spec };
}
