/**
 * The downward API in environment variables: `valueFrom.fieldRef` (upstream
 * podFieldSelectorRuntimeValue + ConvertDownwardAPIFieldLabel) and `valueFrom.resourceFieldRef`
 * (upstream containerResourceRuntimeValue, node allocatable standing in for an unset limit).
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Pod } from '../../api/types.ts';
import { describeError } from '../../util/errors.ts';
import { containerResourceValue, podFieldValue } from '../../api/fieldpath.ts';
import { envError, str, type EnvContext } from './env-context.ts';

/** Field paths the API accepts for a pod (downward API conversion); others are rejected. */
const CONVERTIBLE = new Set([
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.serviceAccountName',
  'spec.schedulerName',
  'status.phase',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
  'spec.terminationGracePeriodSeconds',
]);

/** Upstream sortPodIPs: at most one IP per family, the node's family first. */
export function sortPodIPs(podIPs: string[], hostIP: string | undefined): string[] {
  const v6First = hostIP !== undefined && isIPv6(hostIP);
  const [primary, secondary] = v6First ? [isIPv6, isIPv4] : [isIPv4, isIPv6];
  const out: string[] = [];
  const a = podIPs.find((ip) => primary(ip));
  const b = podIPs.find((ip) => secondary(ip));
  if (a !== undefined) out.push(a);
  if (b !== undefined) out.push(b);
  return out;
}

/** The value of a `fieldRef`; throws a KubeletError naming the variable on a path it cannot read. */
export function fieldRefValue(ctx: EnvContext, name: string, ref: Record<string, unknown>): string {
  const apiVersion = str(ref.apiVersion) || 'v1'; // the API server defaults it to v1
  let path = str(ref.fieldPath);
  if (apiVersion !== 'v1') throw envError('InvalidArgument', name, `unsupported pod version: ${apiVersion}`);
  const sub = /^(.+?)\['(.*)'\]$/s.exec(path);
  if (sub) {
    if (sub[1] !== 'metadata.annotations' && sub[1] !== 'metadata.labels') {
      throw envError('InvalidArgument', name, `field label does not support subscript: ${path}`);
    }
  } else if (path === 'spec.host') {
    path = 'spec.nodeName'; // backwards compatibility with old v1 clients
  } else if (!CONVERTIBLE.has(path)) {
    throw envError('InvalidArgument', name, `field label not supported: ${path}`);
  }
  const { pod } = ctx;
  const podIPs = sortPodIPs(ctx.podIPs, ctx.hostIP);
  const hostIPs = ctx.hostIPs ?? (ctx.hostIP !== undefined ? [ctx.hostIP] : []);
  switch (path) {
    case 'spec.nodeName':
      return pod.spec.nodeName || ctx.nodeName;
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? pod.spec.serviceAccount ?? '';
    case 'status.hostIP':
    case 'status.hostIPs':
      if (hostIPs.length === 0) {
        throw envError('FailedPrecondition', name, `${path}: the node's IP address is not known`);
      }
      return path === 'status.hostIP' ? (hostIPs[0] ?? '') : hostIPs.join(',');
    case 'status.podIP':
      return podIPs[0] ?? '';
    case 'status.podIPs':
      return podIPs.join(',');
  }
  try {
    return podFieldValue(pod, path);
  } catch (err) {
    throw envError('InvalidArgument', name, describeError(err), err);
  }
}

/** The value of a `resourceFieldRef`, in divisor units; throws a KubeletError naming the variable. */
export function resourceFieldRefValue(ctx: EnvContext, name: string, ref: Record<string, unknown>): string {
  const containerName = str(ref.containerName);
  const d = ref.divisor;
  const divisor = typeof d === 'string' || typeof d === 'number' ? String(d) : undefined;
  // No containerName: the container being started (which may not be in pod.spec, e.g. a copy).
  const pod: Pod =
    containerName === ''
      ? { ...ctx.pod, spec: { ...ctx.pod.spec, containers: [ctx.container], initContainers: [] } }
      : ctx.pod;
  try {
    return containerResourceValue(
      pod,
      containerName === '' ? ctx.container.name : containerName,
      str(ref.resource),
      divisor,
      () => ctx.nodeAllocatable,
    );
  } catch (err) {
    throw envError('InvalidArgument', name, describeError(err), err);
  }
}
