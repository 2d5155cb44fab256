/**
 * The downward API's values (upstream pkg/fieldpath ExtractFieldPathAsString and FormatMap, and
 * pkg/api/v1/resource ExtractContainerResourceValue): read by downward API volumes (volume/) and by
 * environment variables (runtime/env/), so they live below both.
 */
import type { Container, KubeletPod, Pod } from './types.ts';
import { isQualifiedName } from './names.ts';
import { milliCPU, parseQuantity } from './quantity.ts';
import { goQuote } from '../util/go-quote.ts';

/** Node allocatable quantities, used for a container limit that is not set (upstream does the same). */
export type NodeAllocatable = () => Partial<Record<'cpu' | 'memory' | 'ephemeral-storage', string | number>>;

/** `key="value"` lines in key order, no trailing newline (upstream fieldpath.FormatMap). */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(m?.[k] ?? '')}`)
    .join('\n');
}

/** Upstream fieldpath.ExtractFieldPathAsString for the pod fields a downward API volume may name. */
export function podFieldValue(pod: KubeletPod, fieldPath: string): string {
  const m = /^([^[]+)\['(.*)'\]$/s.exec(fieldPath);
  if (m) {
    const [, path, key = ''] = m;
    const check = path === 'metadata.annotations' ? key.toLowerCase() : key;
    if (path !== 'metadata.annotations' && path !== 'metadata.labels') {
      throw new Error(`fieldPath "${fieldPath}" does not support subscript`);
    }
    if (!isQualifiedName(check)) throw new Error(`invalid key subscript in ${fieldPath}`);
    return (path === 'metadata.labels' ? pod.metadata.labels : pod.metadata.annotations)?.[key] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    default:
      throw new Error(`unsupported fieldPath: ${fieldPath}`);
  }
}

function findContainer(pod: Pod, name: string | undefined): Container {
  const all = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  const c = all.find((x) => x.name === name);
  if (!c) throw new Error(`container ${name ?? '(unnamed)'} not found in pod`);
  return c;
}

/**
 * Upstream ExtractContainerResourceValue with the kubelet's node-allocatable fallback: a missing
 * limit reads as the node's allocatable amount; a missing request reads as 0. The value is divided by
 * the divisor (default 1) and rounded up. cpu is compared in millicores, everything else in bytes.
 */
export function containerResourceValue(
  pod: Pod,
  containerName: string | undefined,
  resource: string,
  divisor: string | undefined,
  allocatable: NodeAllocatable,
): string {
  const container = findContainer(pod, containerName);
  const m = /^(limits|requests)\.(.+)$/.exec(resource);
  const [, kind, name = ''] = m ?? [];
  const supported =
    m &&
    (name === 'cpu' || name === 'memory' || name === 'ephemeral-storage' || name.startsWith('hugepages-'));
  if (!supported) throw new Error(`unsupported container resource: ${resource}`);
  const set = kind === 'limits' ? container.resources?.limits : container.resources?.requests;
  let value: string | number = set?.[name] ?? 0;
  if (
    set?.[name] === undefined &&
    kind === 'limits' &&
    (name === 'cpu' || name === 'memory' || name === 'ephemeral-storage')
  ) {
    value = allocatable()[name] ?? 0;
  }
  const div =
    divisor === undefined || divisor === '' || parseQuantity(divisor, 'divisor') === 0 ? '1' : divisor;
  if (name === 'cpu') {
    return String(Math.ceil(milliCPU(value, resource) / milliCPU(div, 'divisor')));
  }
  const bytes = Math.ceil(parseQuantity(value, resource));
  return String(Math.ceil(bytes / Math.ceil(parseQuantity(div, 'divisor'))));
}
