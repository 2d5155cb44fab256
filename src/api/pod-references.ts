/**
 * The Secrets and ConfigMaps a pod names (upstream podutil.VisitPodSecretNames and
 * VisitPodConfigmapNames): what the kubelet registers for a pod with its secret and configMap
 * managers, so their caches or watches cover exactly the objects its pods can read. Manifests
 * carry volume sources and `valueFrom`/`envFrom` untyped (`unknown`), so every field is checked
 * here before it is read; a malformed entry names nothing (validation reports it elsewhere).
 */
import type { Container, KubeletPod, Volume } from './types.ts';

/** The names a pod refers to, in its own namespace. */
export interface PodObjectNames {
  secrets: Set<string>;
  configMaps: Set<string>;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function name(o: Obj | undefined, key: string): string | undefined {
  const v = o?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? (v as unknown[]) : [];
}

function add(set: Set<string>, n: string | undefined): void {
  if (n !== undefined) set.add(n);
}

/** Containers, init containers and ephemeral containers (upstream AllContainers). */
function allContainers(pod: KubeletPod): Container[] {
  const ephemeral = list((pod.spec as unknown as Obj).ephemeralContainers).filter(
    (c): c is Container => obj(c) !== undefined,
  );
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers, ...ephemeral];
}

/**
 * The names of the pod volumes some container (init, regular or ephemeral) mounts or maps as a
 * device (upstream GetPodVolumeNames): the volumes the kubelet sets up; a volume no container uses
 * is skipped, as upstream's desired-state populator skips it.
 */
export function usedVolumeNames(pod: KubeletPod): Set<string> {
  const used = new Set<string>();
  for (const c of allContainers(pod)) {
    for (const m of c.volumeMounts ?? []) used.add(m.name);
    for (const d of c.volumeDevices ?? []) used.add(d.name);
  }
  return used;
}

/** Upstream visitContainerSecretNames / visitContainerConfigmapNames. */
function addContainerNames(c: Container, out: PodObjectNames): void {
  for (const from of list(c.envFrom)) {
    const f = obj(from);
    add(out.secrets, name(obj(f?.secretRef), 'name'));
    add(out.configMaps, name(obj(f?.configMapRef), 'name'));
  }
  for (const env of list(c.env)) {
    const valueFrom = obj(obj(env)?.valueFrom);
    add(out.secrets, name(obj(valueFrom?.secretKeyRef), 'name'));
    add(out.configMaps, name(obj(valueFrom?.configMapKeyRef), 'name'));
  }
}

/** The secret and configMap (and projected secret/configMap) sources of one volume. */
function addVolumeNames(v: Volume, out: PodObjectNames): void {
  add(out.secrets, name(obj(v.secret), 'secretName'));
  add(out.configMaps, name(obj(v.configMap), 'name'));
  for (const s of list(obj(v.projected)?.sources)) {
    const source = obj(s);
    add(out.secrets, name(obj(source?.secret), 'name'));
    add(out.configMaps, name(obj(source?.configMap), 'name'));
  }
}

/**
 * Every Secret and ConfigMap the pod names: imagePullSecrets, each container's (init and
 * ephemeral included) `env[].valueFrom` and `envFrom`, and its secret, configMap and projected
 * volumes. Upstream also visits the secret references of volume plugins tskubelet does not
 * implement (azureFile, cephfs, rbd, …); a pod with one fails its mount anyway, so they are left out.
 */
export function podObjectNames(pod: KubeletPod): PodObjectNames {
  const out: PodObjectNames = { secrets: new Set(), configMaps: new Set() };
  for (const ref of list(pod.spec.imagePullSecrets)) add(out.secrets, name(obj(ref), 'name'));
  for (const c of allContainers(pod)) addContainerNames(c, out);
  for (const v of pod.spec.volumes ?? []) addVolumeNames(v, out);
  return out;
}

/** Only the objects the pod's volumes project (what a changed object can rewrite on disk). */
export function podVolumeObjectNames(pod: KubeletPod): PodObjectNames {
  const out: PodObjectNames = { secrets: new Set(), configMaps: new Set() };
  for (const v of pod.spec.volumes ?? []) addVolumeNames(v, out);
  return out;
}
